"""The spool: the file the recording child streams its records to, its records and its tail."""
