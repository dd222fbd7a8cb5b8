"""The skills kit: validate, pin (skills-lock.json), restore into each agent's skill folder."""
