"""Task handlers and schedules of this domain."""
