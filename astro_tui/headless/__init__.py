"""The command line's printing front ends: `astro ask` (`ask.py`), `astro eval`
(`evaluation.py`, its report in `eval_report.py`, its rules for equal results in
`result_match.py`) and `astro replay` (`replay.py`). Like every front end they drive a
`Session`."""
