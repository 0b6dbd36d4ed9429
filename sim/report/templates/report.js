// The run report's tick selector: shows the embedded working set of a chosen tick,
// moves the robot marker and the timeline cursors to it. Data comes from the
// <script type="application/json" id="report-data"> element; nothing is fetched and
// every text is set with textContent.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var snapshots = data.snapshots;
  var order = Object.keys(snapshots).map(Number).sort(function (a, b) { return a - b; });
  var why = {};
  data.worth.forEach(function (w) { why[w.tick] = w.why; });
  var select = document.getElementById('tick-select');
  var view = document.getElementById('tick-view');

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function num(v, digits) {
    if (v === null || v === undefined) { return '-'; }
    return Number(v).toFixed(digits === undefined ? 2 : digits);
  }

  function table(headers, rows, classes) {
    var t = el('table');
    var head = el('tr');
    headers.forEach(function (h) { head.appendChild(el('th', null, h)); });
    t.appendChild(el('thead')).appendChild(head);
    var body = el('tbody');
    rows.forEach(function (row) {
      var tr = el('tr');
      row.forEach(function (cell, i) {
        tr.appendChild(el('td', classes && classes[i] ? { 'class': classes[i] } : null, cell));
      });
      body.appendChild(tr);
    });
    t.appendChild(body);
    return t;
  }

  function list(items) {
    var ul = el('ul');
    items.forEach(function (text) { ul.appendChild(el('li', null, text)); });
    return ul;
  }

  // -- choices ---------------------------------------------------------------------------
  function option(tick, label) {
    var o = el('option', { value: String(tick) }, label);
    return o;
  }
  if (data.worth.length) {
    var worth = el('optgroup', { label: 'worth a look (' + data.worth.length + ')' });
    data.worth.forEach(function (w) {
      var text = 'tick ' + w.tick + ' · ' + w.why.join('; ');
      worth.appendChild(option(w.tick, text.length > 110 ? text.slice(0, 109) + '…' : text));
    });
    select.appendChild(worth);
  }
  if (data.sample.length) {
    var sample = el('optgroup', { label: 'other ticks (' + data.sample.length + ')' });
    data.sample.forEach(function (t) { sample.appendChild(option(t, 'tick ' + t)); });
    select.appendChild(sample);
  }
  document.getElementById('tick-count').textContent =
    order.length + ' of ' + (data.last - data.first + 1) + ' ticks embedded';

  function nearest(tick) {
    if (!order.length) { return null; }
    var best = order[0];
    order.forEach(function (t) { if (Math.abs(t - tick) < Math.abs(best - tick)) { best = t; } });
    return best;
  }

  // -- the map and the timelines ---------------------------------------------------------
  function moveRobot(tick) {
    var robot = document.getElementById('robot-now');
    var at = null;
    data.path.forEach(function (p) { if (p[0] <= tick) { at = p; } });
    if (!at && data.path.length) { at = data.path[0]; }
    if (!robot || !at) { return; }
    robot.setAttribute('transform', 'translate(' + at[1] + ',' + at[2] + ')');
    robot.setAttribute('visibility', 'visible');
  }

  function markRoute(tick) {
    document.querySelectorAll('#map .route').forEach(function (route) {
      var active = (route.getAttribute('data-spans') || '').split(' ').some(function (span) {
        var ab = span.split('-').map(Number);
        return ab.length === 2 && ab[0] <= tick && tick <= ab[1];
      });
      route.classList.toggle('active', active);
    });
  }

  function chartX(svg, tick) {
    var first = Number(svg.getAttribute('data-first'));
    var last = Number(svg.getAttribute('data-last'));
    var x0 = Number(svg.getAttribute('data-x0'));
    var x1 = Number(svg.getAttribute('data-x1'));
    return x0 + (tick - first) / Math.max(1, last - first) * (x1 - x0);
  }

  function moveCursors(tick) {
    document.querySelectorAll('svg.chart').forEach(function (svg) {
      var cursor = svg.querySelector('.cursor');
      var x = chartX(svg, tick);
      cursor.setAttribute('x1', x);
      cursor.setAttribute('x2', x);
      cursor.setAttribute('visibility', 'visible');
    });
  }

  // -- one tick --------------------------------------------------------------------------
  function decision(d) {
    var box = el('div');
    if (!d) { box.appendChild(el('p', { 'class': 'note' }, 'decision not recorded')); return box; }
    if (d.failed) { box.appendChild(el('p', { 'class': 'reason-evicted' }, 'failed: ' + d.failed)); }
    var parts = [['writes', d.writes], ['events', d.events], ['commands', d.commands],
                 ['reactions', d.reactions]];
    var any = false;
    parts.forEach(function (part) {
      if (part[1].length) {
        any = true;
        box.appendChild(el('strong', null, part[0]));
        box.appendChild(list(part[1]));
      }
    });
    if (!any && !d.failed) { box.appendChild(el('p', { 'class': 'note' }, 'decided nothing')); }
    return box;
  }

  function cabin(name, c, text) {
    var details = el('details', { open: '', 'data-cabin': name });
    var bits = c.items.length + ' in view';
    if (c.missing.length) { bits += ' · ' + c.missing.length + ' missing'; }
    if (c.suppressed.length) { bits += ' · ' + c.suppressed.length + ' hidden by a fault'; }
    if (c.decision && c.decision.failed) { bits += ' · FAILED'; }
    details.appendChild(el('summary', null, name + ' — ' + bits));
    if (c.missing.length) {
      details.appendChild(el('strong', null, 'missing'));
      var ul = el('ul');
      c.missing.forEach(function (m) {
        var li = el('li');
        li.appendChild(el('code', null, m[0]));
        li.appendChild(document.createTextNode(' '));
        li.appendChild(el('span', { 'class': 'reason-' + m[1] }, m[1]));
        if (m[2]) { li.appendChild(document.createTextNode(' — ' + m[2])); }
        ul.appendChild(li);
      });
      details.appendChild(ul);
    }
    if (c.suppressed.length) {
      details.appendChild(el('strong', null, 'hidden by a fault'));
      details.appendChild(list(c.suppressed));
    }
    details.appendChild(el('strong', null, 'in view'));
    details.appendChild(table(
      ['key', 'via', 'source', 'importance', 'stamp', 'first seen', 'last used', 'value'],
      c.items.map(function (r) {
        return [text[r[0]], text[r[1]], text[r[2]], num(r[3]), num(r[5]), num(r[6]), num(r[7]),
                text[r[4]]];
      }),
      ['key', 'mono', '', 'num', 'num', 'num', 'num', 'value']));
    details.appendChild(el('strong', null, 'decided'));
    details.appendChild(decision(c.decision));
    return details;
  }

  function show(tick) {
    var s = snapshots[String(tick)];
    if (!s) { return; }
    select.value = String(tick);
    while (view.firstChild) { view.removeChild(view.firstChild); }
    var title = 'tick ' + s.tick + ' · ' + num(s.time) + ' s · ' + s.size + ' items in the working set';
    if (s.alarm) { title += ' · capacity alarm'; }
    view.appendChild(el('h3', { id: 'tick-title' }, title));
    if (why[tick]) { view.appendChild(el('p', { 'class': 'why' }, 'worth a look: ' + why[tick].join('; '))); }
    view.appendChild(el('p', { 'class': 'note' }, 'source versions: board ' + s.versions.board_seq +
      ', map ' + s.versions.map_version + ', log ' + s.versions.log_seq));
    data.cabins.forEach(function (name) {
      if (s.cabins[name]) { view.appendChild(cabin(name, s.cabins[name], data.values)); }
    });
    Object.keys(s.cabins).forEach(function (name) {
      if (data.cabins.indexOf(name) < 0) { view.appendChild(cabin(name, s.cabins[name], data.values)); }
    });
    view.appendChild(el('h3', null, 'evicted at this freeze (' + s.evicted.length + ')'));
    if (s.evicted.length) {
      view.appendChild(table(['key', 'reason', 'importance'], s.evicted.map(function (e) {
        return [e[0], e[1], num(e[2])];
      }), ['key', '', 'num']));
    }
    view.appendChild(el('h3', null, 'held but in no view (' + s.unviewed.length + ')'));
    if (s.unviewed.length) {
      view.appendChild(table(['key', 'source', 'importance', 'value'], s.unviewed.map(function (u) {
        return [data.values[u[0]], data.values[u[1]], num(u[2]), data.values[u[3]]];
      }), ['key', '', 'num', 'value']));
    }
    filterRows();
    moveRobot(tick);
    markRoute(tick);
    moveCursors(tick);
  }

  var filter = document.getElementById('tick-filter');
  function filterRows() {
    var text = filter.value.trim().toLowerCase();
    view.querySelectorAll('tbody tr').forEach(function (row) {
      var key = row.firstChild ? row.firstChild.textContent.toLowerCase() : '';
      row.style.display = !text || key.indexOf(text) >= 0 ? '' : 'none';
    });
  }
  filter.addEventListener('input', filterRows);

  function go(tick) {
    var t = nearest(tick);
    if (t !== null) { show(t); }
  }

  function step(delta) {
    var i = order.indexOf(Number(select.value)) + delta;
    if (i >= 0 && i < order.length) { show(order[i]); }
  }

  select.addEventListener('change', function () { show(Number(select.value)); });
  document.getElementById('tick-prev').addEventListener('click', function () { step(-1); });
  document.getElementById('tick-next').addEventListener('click', function () { step(1); });
  document.querySelectorAll('[data-tick]').forEach(function (node) {
    node.addEventListener('click', function () {
      go(Number(node.getAttribute('data-tick')));
      document.getElementById('tick').scrollIntoView({ behavior: 'smooth' });
    });
  });
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    svg.addEventListener('click', function (event) {
      var matrix = svg.getScreenCTM();
      if (!matrix) { return; }
      var point = svg.createSVGPoint();
      point.x = event.clientX;
      point.y = event.clientY;
      var x = point.matrixTransform(matrix.inverse()).x;
      var first = Number(svg.getAttribute('data-first'));
      var last = Number(svg.getAttribute('data-last'));
      var x0 = Number(svg.getAttribute('data-x0'));
      var x1 = Number(svg.getAttribute('data-x1'));
      var tick = first + (x - x0) / (x1 - x0) * (last - first);
      go(Math.round(Math.min(last, Math.max(first, tick))));
    });
  });

  var first = data.worth.length ? data.worth[0].tick : order[0];
  if (first !== undefined) { show(first); }
}());
