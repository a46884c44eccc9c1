"""The merchant app under /app: what the spec puts "in the app" (see README.md in this folder)."""
