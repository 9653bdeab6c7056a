"""The question page in a real headless browser (Debian's Chromium, driven by Playwright)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sieveqa.runtime.answer.answerer import Answerer
from sieveqa.serving import Service, serve_in_thread
from tests.fakes import KeywordRanker

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (make install apt-gets it when run as root)"
)


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module (a launch is about a second); each test gets a fresh context."""
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def browser_page(browser):
    context = browser.new_context()  # its own cookies, storage and cache: nothing carries between tests
    yield context.new_page()
    context.close()


@pytest.fixture
def answering_url(keyword_answerer: Answerer) -> Iterator[str]:
    with serve_in_thread(
        Service(KeywordRanker(), keyword_answerer, name="keyword", index="demo-index")
    ) as url:
        yield url


@pytest.mark.slow
def test_a_question_shows_its_answer_marked_in_the_passage(browser_page, answering_url: str) -> None:
    page = browser_page
    page.goto(answering_url)
    page.wait_for_function("document.getElementById('loaded').textContent.includes('demo-index')")
    page.fill("#question", "the answer about cats, dogs, rain and snow?")
    page.click("#submit")
    page.wait_for_selector("#result:not([hidden])")
    assert page.text_content("#answer-text") == "The answer is forty two."
    assert page.text_content("#answer-passage mark") == "The answer is forty two."
    assert page.text_content("#answer-title") == "Animals"
    cost = page.text_content("#cost") or ""
    assert cost.startswith("peasi: 5 inferences") and "ms in all" in cost
    others = page.locator("#passages li").all_text_contents()
    assert len(others) == 3 and all("score" in o for o in others)
    assert page.is_visible("#others")


def test_a_question_without_a_match_says_so(browser_page, answering_url: str) -> None:
    page = browser_page
    page.goto(answering_url)
    page.fill("#question", "zzz qqq")
    page.click("#submit")
    page.wait_for_selector("#result:not([hidden])")
    assert "No answer" in (page.text_content("#answer-text") or "")
    assert page.is_hidden("#others")  # no passages to list


def test_without_an_index_the_page_says_how_to_load_one(browser_page, tiny_model) -> None:
    with serve_in_thread(Service(tiny_model)) as url:
        browser_page.goto(url)
        browser_page.wait_for_function("document.getElementById('loaded').textContent.includes('index')")
        assert "--index DIR" in (browser_page.text_content("#loaded") or "")
        assert browser_page.is_disabled("#submit")


@pytest.mark.slow
def test_an_answer_below_min_confidence_is_shown_as_a_best_guess(browser_page, keyword_answerer) -> None:
    from sieveqa.runtime.answer.confidence import Confidence

    question = "the answer about cats, dogs, rain and snow?"
    best = keyword_answerer.answer(question).best.score
    keyword_answerer.confidence = Confidence(1.0, -best - 1.0, min_confidence=0.5)  # P(right) 0.27
    keyword_answerer.min_confidence = 0.5
    with serve_in_thread(
        Service(KeywordRanker(), keyword_answerer, name="keyword", index="demo-index")
    ) as url:
        page = browser_page
        page.goto(url)
        page.wait_for_function("document.getElementById('loaded').textContent.includes('demo-index')")
        page.fill("#question", question)
        page.click("#submit")
        page.wait_for_selector("#result:not([hidden])")
        text = page.text_content("#answer-text") or ""
        assert text == "No answer found in your documents. Best guess: The answer is forty two."
        assert page.text_content("#answer-confidence") == "confidence 0.27"
