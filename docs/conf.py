"""Sphinx configuration of the marlinkit documentation site (``make docs``; built from a staging copy)."""

project = "marlinkit"
author = "marlinkit contributors"
copyright = "marlinkit contributors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "**/__pycache__", "_templates"]
templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["site.css"]
html_theme = "pydata_sphinx_theme"
html_title = "marlinkit"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": {"**": ["page-toc"], "index": []},
    # The top bar: the sections' names on one row, the rest of the site in the left tree.
    "header_links_before_dropdown": 4,
    "navbar_align": "left",
}
# A left navigation tree of the whole site on every page (the theme's own tree shows only the current section).
html_sidebars = {"**": ["sidebar-site-nav"]}
# No external fonts, analytics or CDN: the site must render offline.
html_permalinks = True
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
