// Connects to a live view with the Foxglove WebSocket protocol's own client library
// (FoxgloveClient of @foxglove/ws-protocol, over the `ws` package, offering the
// subprotocol that library names: foxglove.websocket.v1), subscribes to every channel,
// and after the given number of time messages prints one JSON object: the subprotocol
// agreed, the server's info, the channels advertised, per topic the messages (count and
// the ticks of /board and /stats, their log times and those of /scan as strings), and
// the times received.
// Exits 1 when the connection fails.
"use strict";
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const WebSocket = require("ws");

const [url, wantedTimes] = [process.argv[2], Number(process.argv[3] || 20)];
const ws = new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
const client = new FoxgloveClient({ ws });
const decoder = new TextDecoder();
const out = { offered: FoxgloveClient.SUPPORTED_SUBPROTOCOL, protocol: null, serverInfo: null,
  channels: {}, messages: {}, times: [] };
const topics = new Map();

function finish(code) {
  console.log(JSON.stringify(out));
  process.exit(code);
}

ws.on("open", () => { out.protocol = ws.protocol; });
client.on("serverInfo", (info) => { out.serverInfo = info; });
client.on("advertise", (channels) => {
  for (const channel of channels) {
    out.channels[channel.topic] = { schemaName: channel.schemaName, encoding: channel.encoding };
    topics.set(client.subscribe(channel.id), channel.topic);
  }
});
client.on("message", ({ subscriptionId, timestamp, data }) => {
  const topic = topics.get(subscriptionId);
  const entry = (out.messages[topic] ??= { count: 0, ticks: [], log_times: [] });
  entry.count += 1;
  if (topic === "/board" || topic === "/stats") {
    const message = JSON.parse(decoder.decode(data));
    entry.ticks.push(message.tick);
    entry.log_times.push(timestamp.toString());
  } else if (topic === "/scan") {
    entry.log_times.push(timestamp.toString());
  }
});
client.on("time", ({ timestamp }) => {
  out.times.push(timestamp.toString());
  if (out.times.length >= wantedTimes) setTimeout(() => finish(0), 300);
});
client.on("error", (err) => { out.error = String((err && err.message) || err); finish(1); });
client.on("close", () => { out.closed = true; });
setTimeout(() => { out.error = "timed out"; finish(1); }, 60000);
