"""Screens of graphdoctor's terminal UI."""
