"""Legacy toy plugin package."""
