# The parts of simonw/llm's tests/conftest.py that tests/test_tools_streaming.py uses, as upstream
# wrote them (the rest needs pytest-httpx and the project's mock models).
import pytest


@pytest.fixture
def user_path(tmpdir):
    dir = tmpdir / "llm.datasette.io"
    dir.mkdir()
    return dir


@pytest.fixture(autouse=True)
def env_setup(monkeypatch, user_path):
    monkeypatch.setenv("LLM_USER_PATH", str(user_path))


@pytest.fixture(scope="module")
def vcr_config():
    return {"filter_headers": ["Authorization"]}
