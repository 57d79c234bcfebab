"""The engine: from the paths a user loads to the tables of each view, transport-neutral.

capture.py (open the files of a load, recognise their formats, assemble attachments) ->
index.py (what planning keeps of each file) -> plan.py (partitions) -> decode.py (what a
partition reads) -> views.py (the views: schema, planning and reading); write.py is the way
back, and options.py parses what the user asked.
"""
