"""OAuth 2.0 client credentials: credentials, the token endpoint, scopes and bearer dependencies."""
