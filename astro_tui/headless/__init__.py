"""The command line's front ends that print a turn: `astro ask` (`ask.py`) and `astro eval`
(`evaluation.py`, its report in `eval_report.py`, its rules for equal results in
`result_match.py`). Like every front end they drive a `Session`."""
