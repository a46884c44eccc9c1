"""The merchant's people: app users (argon2id passwords, Owner or Staff) and their server-side sessions."""
