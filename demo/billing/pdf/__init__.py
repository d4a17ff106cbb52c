"""PDF rendering with WeasyPrint."""
