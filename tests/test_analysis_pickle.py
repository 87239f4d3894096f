"""A page's analysis crossing processes: its object parts travel as one blob that a process
forwarding the analysis (the crawl's, from a worker to the label process) never unpickles."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest

from tests.conftest import FIXTURES
from visdup.dedup.analysis import AnalysisOptions, PageAnalysis, analyse_bytes

PAGE = FIXTURES / "sites" / "templates"

unpickled = 0


class Counted:
    """A part that counts how often it is unpickled."""

    def __reduce__(self):
        return (_revive, ())


def _revive() -> Counted:
    global unpickled
    unpickled += 1
    return Counted()


def _roundtrip(value):
    return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def test_parts_are_unpickled_only_where_they_are_read():
    global unpickled
    unpickled = 0
    analysis = PageAnalysis(url="http://a/", title="A", term=Counted(), template_input=Counted())
    forwarded = _roundtrip(_roundtrip(analysis))  # a worker's, passed on by the crawl
    assert unpickled == 0
    assert forwarded.url == "http://a/" and forwarded.title == "A"
    assert forwarded.has_template_input  # read without the parts
    assert unpickled == 0
    assert isinstance(forwarded.term, Counted) and forwarded.content is None
    assert unpickled == 2  # both parts, once, when the first is read
    assert isinstance(forwarded.template_input, Counted)
    assert unpickled == 2
    bare = _roundtrip(PageAnalysis(url="http://b/", problem="empty body"))
    assert bare.term is None and not bare.has_template_input and bare.problem == "empty body"


def _analysis(name: str) -> PageAnalysis:
    path = next(p for p in sorted(PAGE.rglob("*.html")) if p.name == name)
    return analyse_bytes(
        path.read_bytes(),
        "http://site/" + name,
        None,
        "text/html",
        None,
        AnalysisOptions(content=True, template=True, keep_body=True),
    )


def test_a_forwarded_analysis_stores_what_the_original_stores():
    name = sorted(p.name for p in PAGE.rglob("*.html"))[0]
    original = _analysis(name)
    assert original.term is not None and original.has_template_input
    forwarded = _roundtrip(_roundtrip(original))
    mine, theirs = original.record(keep_body=True), forwarded.record(keep_body=True)
    assert vars(mine) == vars(theirs)
    assert forwarded.term is not None and str(forwarded.term) == str(original.term)
    assert forwarded.content is not None and original.content is not None
    assert forwarded.content.to_json() == original.content.to_json()
    assert forwarded.template_input is not None and original.template_input is not None
    assert forwarded.template_input.layout.key == original.template_input.layout.key
    assert forwarded.template_input.tree is not None
    # a changed copy holds its own values, and pickles them anew
    renamed = replace(forwarded, title="Renamed", template_input=None)
    assert renamed.title == "Renamed" and not renamed.has_template_input
    assert str(renamed.term) == str(original.term)
    again = _roundtrip(renamed)
    assert again.title == "Renamed" and again.template_input is None
    assert str(again.term) == str(original.term)


def test_a_worker_analysis_leaves_the_cycle_collector_as_it_found_it(monkeypatch):
    import gc

    import visdup.dedup.analysis as analysis_module

    seen: list[bool] = []
    real = analysis_module.analyse

    def watched(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    def failing(*args, **kwargs):
        raise RuntimeError("a parser crashed")

    name = sorted(p.name for p in PAGE.rglob("*.html"))[0]
    was = gc.isenabled()
    try:
        gc.enable()
        monkeypatch.setattr(analysis_module, "analyse", watched)
        assert _analysis(name).term is not None
        assert seen == [False] and gc.isenabled()  # paused for the page alone
        monkeypatch.setattr(analysis_module, "analyse", failing)
        with pytest.raises(RuntimeError):
            _analysis(name)
        assert gc.isenabled()
        gc.disable()  # a process that collects by itself: left so
        monkeypatch.setattr(analysis_module, "analyse", watched)
        _analysis(name)
        assert seen == [False, False] and not gc.isenabled()
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()
