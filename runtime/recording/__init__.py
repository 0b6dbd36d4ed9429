"""The flight recording of a run: its format, the writer, the reader and archaeology on it.

``format`` defines every channel once (topic, a typed record per message, the JSON
Schema generated from it); ``writer`` records a run as MCAP, ``reader`` reads one
back (up to the break of a damaged file) and ``inspect`` answers questions about it.
"""
