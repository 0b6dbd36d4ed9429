"""The backoff policy: exponential waits with seeded jitter, within the cap, at least what a
429's or 503's Retry-After asks, none after a permanent error; and Retry-After read as
seconds, milliseconds or an HTTP-date against the response's own Date."""

from __future__ import annotations

import email.utils
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.backoff import PERMANENT_STATUSES, Backoff, retry_after_seconds
from runtime.errors import SettingError

policies = st.builds(
    lambda base, factor, extra, jitter: Backoff(
        base=base, factor=factor, cap=base + extra, jitter=jitter
    ),
    st.floats(0.01, 100),
    st.floats(1, 10),
    st.floats(0, 1000),
    st.floats(0, 1),
)


@given(
    policies,
    st.integers(1, 2000),
    st.integers(0, 2**32 - 1),
    st.sampled_from([None, 429, 500, 503]),
    st.none() | st.floats(0, 1e6),
)
def test_a_wait_is_jittered_below_its_nominal_within_the_cap_and_honours_retry_after(
    policy: Backoff, failures: int, seed: int, status: int | None, retry_after: float | None
) -> None:
    rng = np.random.default_rng(seed)
    wait = policy.wait(failures, rng, status=status, retry_after=retry_after)
    assert wait is not None
    nominal = policy.cap
    if (failures - 1) * math.log(policy.factor) < math.log(policy.cap / policy.base):
        nominal = min(policy.cap, policy.base * policy.factor ** (failures - 1))
    assert wait <= policy.cap
    if retry_after is not None and status in (429, 503):
        assert wait >= min(retry_after, policy.cap)
    else:
        assert nominal * (1 - policy.jitter) - 1e-9 <= wait <= nominal
    rng = np.random.default_rng(seed)
    again = policy.wait(failures, rng, status=status, retry_after=retry_after)
    assert again == wait  # the seed's, every time


def test_waits_double_from_the_base_and_stop_at_the_cap() -> None:
    policy = Backoff(base=1.0, factor=2.0, cap=10.0, jitter=0.0)
    rng = np.random.default_rng(0)
    assert [policy.wait(n, rng) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert policy.wait(10**9, rng) == 10.0  # no overflow however long it fails


def test_retry_after_counts_on_429_and_503_only_and_is_capped() -> None:
    policy = Backoff(base=1.0, cap=60.0, jitter=0.0)
    rng = np.random.default_rng(0)
    assert policy.wait(1, rng, status=429, retry_after=20.0) == 20.0
    assert policy.wait(1, rng, status=503, retry_after=20.0) == 20.0
    assert policy.wait(1, rng, status=500, retry_after=20.0) == 1.0
    assert policy.wait(1, rng, status=429, retry_after=86_400.0) == 60.0  # a day: capped


@pytest.mark.parametrize("status", sorted(PERMANENT_STATUSES))
def test_permanent_statuses_are_never_tried_again(status: int) -> None:
    assert {400, 401, 403, 404, 422} == PERMANENT_STATUSES
    assert Backoff().wait(1, np.random.default_rng(0), status=status) is None
    assert Backoff(permanent=frozenset()).wait(1, np.random.default_rng(0), status=status)


@pytest.mark.parametrize(
    "settings",
    [
        {"base": 0},
        {"base": -1.0},
        {"cap": float("inf")},
        {"factor": 0.5},
        {"base": 10.0, "cap": 5.0},
        {"jitter": 1.5},
        {"jitter": True},
        {"permanent": {401}},
    ],
)
def test_bad_settings_are_refused(settings: dict[str, Any]) -> None:
    with pytest.raises(SettingError):
        Backoff(**settings)


def test_retry_after_is_read_as_seconds_milliseconds_or_an_http_date() -> None:
    date = email.utils.formatdate(1_700_000_000, usegmt=True)
    later = email.utils.formatdate(1_700_000_030, usegmt=True)
    assert retry_after_seconds({"Retry-After": "20"}) == 20.0
    assert retry_after_seconds({"retry-after": " 1.5 "}) == 1.5
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "20"}) == 0.25
    assert retry_after_seconds({"Retry-After": later, "Date": date}) == 30.0
    assert retry_after_seconds({"Retry-After": date, "Date": later}) == 0.0  # in the past
    assert retry_after_seconds({"Retry-After": later}) is None  # no Date: no local clock
    for bad in ("soon", "-5", "nan", "inf", ""):
        assert retry_after_seconds({"Retry-After": bad, "Date": date}) is None
    assert retry_after_seconds({}) is None


@given(st.dictionaries(st.sampled_from(["Retry-After", "retry-after-ms", "Date"]), st.text()))
def test_any_headers_give_a_wait_of_zero_or_more_or_none(headers: dict[str, str]) -> None:
    wait = retry_after_seconds(headers)
    assert wait is None or wait >= 0
