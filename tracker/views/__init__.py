"""Read models for the pages and the API: nothing here writes."""
