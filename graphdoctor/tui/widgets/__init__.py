"""Widgets of graphdoctor's terminal UI."""
