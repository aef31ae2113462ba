"""The memory bank format: files, frontmatter, names, the index, the secrets ban, commit_memory."""
