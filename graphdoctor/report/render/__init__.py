"""The report rendered for people and tools: text, markdown, Chrome trace, DOT, diffs."""
