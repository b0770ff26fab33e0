"""What the three import chains (history, CI, sweep) share, whatever the source:

  output.py    records.jsonl (sorted, canonical, runs streamed) and report.json, written atomically
  fetch.py     one file by https URL or local path: capped in size and time, redirects checked hop by
               hop, tokens redacted in every message
  archive.py   release archives: the content-addressed cache, whole-archive verification, safe
               extraction (regular files and directories only, all or nothing)
  result.py    the import result (records + report + snapshot) and a row issue
  coverage.py  coverage cells (kernel x provider x mode x GPU x version x metric) and their merge

Plain Python, no Dagster. Only what the existing chains already share lives here; a source's own
reading, slicing and skip reasons stay with the source (liger/).
"""
