"""Reports: a recorded run, or a campaign's results, as one self-contained HTML page.

``collect`` reads what a report draws from a recording, ``svg`` draws the warehouse
map, ``charts`` the timelines, ``pages`` puts the run page together and ``campaign``
the fault matrix; ``html`` is the escaping, templates and writing they share.
"""
