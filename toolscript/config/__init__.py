"""Configuration: the files, their validation, the keys hot paths read, and which project files the user trusts."""
