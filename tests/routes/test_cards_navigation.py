"""A card page's Previous/Next: within the list the visitor came from, else within the card's topic."""

from __future__ import annotations

import re
from html import unescape

from fastapi.testclient import TestClient


def _list_links(client: TestClient, query: str) -> list[str]:
    """The card links of a list page, as the browser follows them."""
    page = client.get(f"/cards?{query}")
    assert page.status_code == 200
    return [unescape(h) for h in re.findall(r'<a href="(/cards/[a-z0-9-]+\?[^"]*)">', page.text)]


def _nav(html: str) -> dict[str, str]:
    nav = re.search(r'<nav class="card-nav".*?</nav>', html, re.S)
    assert nav, "no Previous/Next on the card page"
    found = {"scope": re.sub(r"\s+", " ", re.search(r'id="card-nav-scope">(.*?)</p>', nav[0], re.S)[1])}  # type: ignore[index]
    for rel in ("prev", "next"):
        link = re.search(rf'rel="{rel}" href="([^"]+)"', nav[0])
        if link:
            found[rel] = unescape(link[1])
    found["back"] = unescape(re.search(r'href="([^"]+)" id="back-to-list"', nav[0])[1])  # type: ignore[index]
    return found


def test_next_and_previous_walk_the_filtered_list_in_its_order(client: TestClient) -> None:
    links = _list_links(client, "q=&topic=kv-memory&difficulty=")
    assert len(links) >= 3 and all("topic=kv-memory" in h and "from=list" in h for h in links)
    second = client.get(links[1])
    nav = _nav(second.text)
    assert nav["prev"] == links[0] and nav["next"] == links[2]
    assert f"Card 2 of {len(links)} in your list (topic" in nav["scope"]
    assert nav["back"] == "/cards?topic=kv-memory"
    # The last card has no Next; the first no Previous.
    assert "next" not in _nav(client.get(links[-1]).text)
    assert "prev" not in _nav(client.get(links[0]).text)


def test_a_search_list_keeps_its_search_and_crosses_topics(client: TestClient) -> None:
    links = _list_links(client, "q=memory")
    assert len(links) >= 3
    ids = [h.split("?")[0] for h in links]
    for i in range(1, len(ids) - 1):
        nav = _nav(client.get(links[i]).text)
        assert nav["prev"].split("?")[0] == ids[i - 1] and nav["next"].split("?")[0] == ids[i + 1]
        assert "q=memory" in nav["next"] and "search “memory”" in nav["scope"]


def test_back_to_the_list_opens_the_page_that_shows_the_card(client: TestClient) -> None:
    first_page = _list_links(client, "")
    second_page = _list_links(client, "page=2")
    assert len(first_page) == 20 and second_page
    nav = _nav(client.get(second_page[0]).text)
    assert nav["back"] == "/cards?page=2" and "(all cards)" in nav["scope"]
    assert nav["prev"] == first_page[-1]  # the list's order runs on across its pages


def test_a_plain_visit_walks_the_cards_topic_and_says_so(client: TestClient) -> None:
    topic_links = _list_links(client, "topic=mha-mqa-gqa")
    ids = [h.split("?")[0] for h in topic_links]
    nav = _nav(client.get(ids[1]).text)
    assert nav["prev"] == ids[0] and nav["next"] == ids[2]  # no query: the next card is a plain visit too
    assert nav["scope"].startswith(f"Card 2 of {len(ids)} in the topic MHA, MQA and GQA")
    assert nav["back"] == "/cards?topic=mha-mqa-gqa"


def test_a_card_outside_the_list_falls_back_to_its_topic(client: TestClient) -> None:
    outside = client.get("/cards/what-the-cache-stores?topic=rope&from=list")
    assert outside.status_code == 200
    assert "(this card is not in the list you came from)" in _nav(outside.text)["scope"]


def test_bad_list_parameters_are_a_clear_422(client: TestClient) -> None:
    for query in ("topic=no-such-topic&from=list", "difficulty=impossible&from=list", "from=elsewhere"):
        response = client.get(f"/cards/what-the-cache-stores?{query}", headers={"Accept": "text/html"})
        assert response.status_code == 422, query
    assert client.get("/cards/no-such-card?topic=rope&from=list").status_code == 404
