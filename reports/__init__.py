"""Reports: Jinja2 templates rendered into a static HTML site."""
