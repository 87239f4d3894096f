"""The one place SQL lives: schema, the store, lock keys."""
