use super::*;

/// A session's first reconcile, alone, everything in place.
fn first() -> Facts {
    Facts {
        browser: Browser::Own,
        auth_state: false,
        references_missing: false,
        gave_up: false,
        untouched: true,
        baseline: true,
        pod_cached: false,
        deferred: false,
        created_unseen: false,
        recorded: false,
        burst: false,
    }
}

/// A later reconcile of a running session.
fn later() -> Facts {
    Facts { untouched: false, pod_cached: true, recorded: true, ..first() }
}

/// Every combination of facts, for the properties that hold in all.
fn every() -> impl Iterator<Item = Facts> {
    let browsers = [
        Browser::Own,
        Browser::Refused,
        Browser::Waiting,
        Browser::Claimed { fresh: true },
        Browser::Claimed { fresh: false },
        Browser::PooledCold,
    ];
    browsers.into_iter().flat_map(|browser| {
        (0u16..1 << 10).map(move |bits| {
            let bit = |i: u16| bits & (1 << i) != 0;
            Facts {
                browser,
                auth_state: bit(0),
                references_missing: bit(1),
                gave_up: bit(2),
                untouched: bit(3),
                baseline: bit(4),
                pod_cached: bit(5),
                deferred: bit(6),
                created_unseen: bit(7),
                recorded: bit(8),
                burst: bit(9),
            }
        })
    })
}

#[test]
fn the_gate_forgets_deleted_sessions_before_anything_else() {
    let deleted = Arrival { deleting: true, stale: true, yielding_first: Some(Phase::Pending) };
    assert_eq!(gate(&deleted), Gate::Forget);
}

#[test]
fn the_gate_waits_for_its_own_status_write_to_come_back() {
    let stale = Arrival { deleting: false, stale: true, yielding_first: None };
    assert_eq!(gate(&stale), Gate::LookAgain(STALE_REQUEUE));
}

#[test]
fn a_yielding_first_status_waits_only_while_it_says_nothing_new() {
    let yielding = |phase| Arrival { deleting: false, stale: false, yielding_first: Some(phase) };
    for phase in [Phase::Pending, Phase::Starting] {
        assert_eq!(gate(&yielding(phase)), Gate::LookAgain(burst::RETRY), "{phase:?}");
    }
    for phase in [Phase::Ready, Phase::Failed, Phase::Completed, Phase::Degraded] {
        assert_eq!(gate(&yielding(phase)), Gate::Reconcile, "{phase:?} is news: written at once");
    }
    let plain = Arrival { deleting: false, stale: false, yielding_first: None };
    assert_eq!(gate(&plain), Gate::Reconcile);
}

#[test]
fn untouched_needs_every_sign_that_nothing_exists() {
    assert!(untouched(false, false, false, true));
    assert!(!untouched(true, false, false, true), "a status: an earlier reconcile ran");
    assert!(!untouched(false, true, false, true), "deferred: its children exist");
    assert!(!untouched(false, false, true, true), "failed half-way before");
    assert!(!untouched(false, false, false, false), "the caches have not listed yet");
}

#[test]
fn a_first_reconcile_creates_everything_at_once() {
    assert_eq!(plan(&first()), Plan::CreateAtOnce { defer_status: false });
    assert_eq!(plan(&Facts { burst: true, ..first() }), Plan::CreateAtOnce { defer_status: true });
}

#[test]
fn a_first_reconcile_without_the_baseline_or_a_full_picture_applies_first() {
    let apply = Plan::ApplyThenCreate { create_pod: true, recorded: false };
    assert_eq!(plan(&Facts { baseline: false, ..first() }), apply, "the Pod waits for its own policy");
    assert_eq!(plan(&Facts { untouched: false, ..first() }), apply);
    assert_eq!(plan(&Facts { pod_cached: true, ..first() }), apply, "the Pod is there already");
}

#[test]
fn missing_references_or_a_spent_budget_make_no_pod() {
    for facts in [Facts { references_missing: true, ..first() }, Facts { gave_up: true, ..later() }] {
        assert!(
            matches!(plan(&facts), Plan::ApplyThenCreate { create_pod: false, .. }),
            "{facts:?}: {:?}",
            plan(&facts)
        );
    }
}

#[test]
fn a_later_reconcile_applies_and_reads_the_pod_it_named() {
    assert_eq!(plan(&later()), Plan::ApplyThenCreate { create_pod: true, recorded: true });
}

#[test]
fn a_deferred_first_status_whose_pod_the_watch_has_not_shown_uses_the_pod_as_built() {
    let deferred = Facts { untouched: false, deferred: true, created_unseen: true, ..first() };
    assert_eq!(plan(&deferred), Plan::AsBuilt);
    // Shown and gone since: applied, and made again.
    let gone = Facts { created_unseen: false, ..deferred };
    assert_eq!(plan(&gone), Plan::ApplyThenCreate { create_pod: true, recorded: false });
}

#[test]
fn a_fresh_claim_is_settled_beside_its_status_unless_it_loads_an_auth_state() {
    let claimed = |fresh, auth_state| Facts { browser: Browser::Claimed { fresh }, auth_state, ..later() };
    assert_eq!(plan(&claimed(true, false)), Plan::Claimed(Settle::BesideStatus));
    assert_eq!(plan(&claimed(true, true)), Plan::Claimed(Settle::First { fresh: true }));
    assert_eq!(plan(&claimed(false, false)), Plan::Claimed(Settle::First { fresh: false }));
    assert_eq!(plan(&claimed(false, true)), Plan::Claimed(Settle::First { fresh: false }));
}

#[test]
fn a_pooled_cold_start_never_creates_at_once() {
    let cold = Facts { browser: Browser::PooledCold, ..first() };
    assert_eq!(plan(&cold), Plan::ApplyThenCreate { create_pod: true, recorded: false });
}

#[test]
fn a_session_without_a_browser_waits_or_is_refused_whatever_else_holds() {
    for facts in every() {
        let expected = match facts.browser {
            Browser::Waiting => Some(Plan::Wait),
            Browser::Refused => Some(Plan::Refuse),
            _ => None,
        };
        assert_eq!(expected.is_some(), !facts.browser.runs(), "{facts:?}");
        if let Some(expected) = expected {
            assert_eq!(plan(&facts), expected, "{facts:?}");
        }
    }
}

#[test]
fn properties_that_hold_in_every_combination() {
    for facts in every() {
        let planned = plan(&facts);
        let creates = matches!(planned, Plan::CreateAtOnce { .. } | Plan::ApplyThenCreate { create_pod: true, .. });
        if creates {
            assert!(!facts.references_missing && !facts.gave_up, "a Pod it cannot run: {facts:?} → {planned:?}");
        }
        if let Plan::CreateAtOnce { defer_status } = planned {
            assert_eq!(facts.browser, Browser::Own, "only a session's own browser is made in one go");
            assert!(facts.untouched && facts.baseline && !facts.pod_cached, "{facts:?}");
            assert_eq!(defer_status, facts.burst);
        }
        if matches!(facts.browser, Browser::Claimed { .. }) {
            assert!(matches!(planned, Plan::Claimed(_)), "a claimed Pod is never made again: {facts:?}");
        }
        if let Plan::ApplyThenCreate { recorded, .. } = planned {
            assert_eq!(recorded, facts.recorded);
        }
    }
}
