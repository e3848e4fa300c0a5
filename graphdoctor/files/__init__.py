"""Every file graphdoctor names, opens for writing, or writes, compressed or not.

- :mod:`graphdoctor.files.run_files`: the names of a run's files (its report, spools, tails,
  fault files; a claimed default name), settled before a script starts;
- :mod:`graphdoctor.files.writing`: how a path is written, by what it is (a new file, a file
  replaced atomically, a link's target, a device streamed into), and the files graphdoctor
  creates itself;
- :mod:`graphdoctor.files.compression`: gzip, the one way a ``.gz`` name is written;
- :mod:`graphdoctor.files.json_text`: JSON as graphdoctor writes it, in named styles, always
  safe to show on a terminal.

A ground package: it imports nothing of graphdoctor but its errors and its text cleaning, so
every stage, the recorder included, writes through it.
"""
