"""Sphinx configuration of the marlinkit documentation site (``make docs``; built from a staging copy)."""

project = "marlinkit"
author = "marlinkit contributors"
copyright = "marlinkit contributors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "**/__pycache__"]
html_theme = "pydata_sphinx_theme"
html_title = "marlinkit"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"**": []}  # one column of content: the navigation is the top bar
# No external fonts, analytics or CDN: the site must render offline.
html_permalinks = True
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
