"""Splitting a list of search results into pages, as the web UI shows them."""


def page_count(total, per_page):
    """How many pages are needed to show total items, per_page on each page."""
    if total <= 0:
        return 0
    return (total + per_page - 1) // per_page


def page_items(items, page, per_page):
    """The items shown on the given page. Pages are numbered from 1."""
    start = page * per_page
    end = start + per_page
    return items[start:end]


def page_label(page, total, per_page):
    """A label like 'page 2 of 5'."""
    return f"page {page} of {page_count(total, per_page)}"
