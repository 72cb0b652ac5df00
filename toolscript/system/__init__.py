"""What toolscript asks of the operating system beyond the standard library: cgroups, opening files beneath a root."""
