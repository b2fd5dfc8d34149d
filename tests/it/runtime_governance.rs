//! Governance: quorum, weights, veto, expiry, and arbitration with its tie-break.

use std::time::Duration;

use conclave::config::Config;
use conclave::runtime::{
    Accessor, AgentId, Conflict, DecisionStatus, GovernanceError, Layer, MessageKind, Proposal,
    Quorum, Signer, Vote, Voter, WhiteboardId,
};
use serde_json::json;
use uuid::Uuid;

use crate::support::common::runtime;

fn proposal(signers: &[(AgentId, f64)], quorum: Quorum, ttl: Option<Duration>) -> Proposal {
    Proposal {
        proposer: AgentId::new(),
        title: "Plan for task 1".into(),
        content: json!({ "subtasks": 3 }),
        signers: signers
            .iter()
            .map(|&(agent, weight)| Signer { agent, weight })
            .collect(),
        quorum,
        ttl,
    }
}

#[tokio::test]
async fn quorum_all_needs_every_signature() {
    let runtime = runtime(Config::default());
    let [a, b, c] = [AgentId::new(), AgentId::new(), AgentId::new()];
    let d = runtime
        .governance
        .propose(proposal(&[(a, 1.0), (b, 1.0), (c, 1.0)], Quorum::All, None))
        .unwrap();
    assert_eq!(
        runtime.governance.sign(d.id, a).unwrap().status,
        DecisionStatus::Pending
    );
    assert_eq!(
        runtime.governance.sign(d.id, b).unwrap().status,
        DecisionStatus::Pending
    );
    assert_eq!(
        runtime.governance.sign(d.id, a).unwrap_err(),
        GovernanceError::AlreadyVoted {
            agent: a,
            decision: d.id
        }
    );
    let outsider = AgentId::new();
    assert_eq!(
        runtime.governance.sign(d.id, outsider).unwrap_err(),
        GovernanceError::NotASigner {
            agent: outsider,
            decision: d.id
        }
    );
    let done = runtime.governance.sign(d.id, c).unwrap();
    assert_eq!(done.status, DecisionStatus::Approved);
    assert_eq!(done.signatures.len(), 3);
    assert_eq!(
        runtime.governance.outcome(d.id).await.unwrap(),
        DecisionStatus::Approved
    );
    assert!(matches!(
        runtime.governance.sign(d.id, c),
        Err(GovernanceError::NotPending {
            status: DecisionStatus::Approved,
            ..
        })
    ));
}

#[tokio::test]
async fn one_veto_ends_a_unanimous_decision_with_its_reason() {
    let runtime = runtime(Config::default());
    let [a, b] = [AgentId::new(), AgentId::new()];
    let d = runtime
        .governance
        .propose(proposal(&[(a, 1.0), (b, 1.0)], Quorum::All, None))
        .unwrap();
    runtime.governance.sign(d.id, a).unwrap();
    let vetoed = runtime
        .governance
        .veto(d.id, b, "the plan writes outside src/")
        .unwrap();
    assert_eq!(vetoed.status, DecisionStatus::Vetoed);
    assert_eq!(vetoed.vetoes[0].reason, "the plan writes outside src/");
    let stored = runtime.store.as_ref().unwrap().decisions().await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].status, DecisionStatus::Vetoed);
}

#[tokio::test]
async fn a_weighted_majority_counts_weight_not_heads() {
    let runtime = runtime(Config::default());
    let [heavy, light1, light2] = [AgentId::new(), AgentId::new(), AgentId::new()];
    let signers = [(heavy, 3.0), (light1, 1.0), (light2, 1.0)];

    // The heavy signer alone holds 3 of 5: approved.
    let d = runtime
        .governance
        .propose(proposal(&signers, Quorum::WeightedMajority, None))
        .unwrap();
    assert_eq!(
        runtime.governance.sign(d.id, heavy).unwrap().status,
        DecisionStatus::Approved
    );

    // Both light signers (2 of 5) are not enough, and the heavy veto makes a majority impossible.
    let d = runtime
        .governance
        .propose(proposal(&signers, Quorum::WeightedMajority, None))
        .unwrap();
    assert_eq!(
        runtime.governance.sign(d.id, light1).unwrap().status,
        DecisionStatus::Pending
    );
    assert_eq!(
        runtime.governance.sign(d.id, light2).unwrap().status,
        DecisionStatus::Pending
    );
    assert_eq!(
        runtime
            .governance
            .veto(d.id, heavy, "too risky")
            .unwrap()
            .status,
        DecisionStatus::Vetoed
    );

    // A light veto leaves a majority reachable.
    let d = runtime
        .governance
        .propose(proposal(&signers, Quorum::WeightedMajority, None))
        .unwrap();
    assert_eq!(
        runtime.governance.veto(d.id, light1, "meh").unwrap().status,
        DecisionStatus::Pending
    );
    assert_eq!(
        runtime.governance.sign(d.id, heavy).unwrap().status,
        DecisionStatus::Approved
    );
}

#[tokio::test(start_paused = true)]
async fn an_unsigned_decision_expires_at_its_deadline() {
    let runtime = runtime(Config::default());
    let a = AgentId::new();
    let d = runtime
        .governance
        .propose(proposal(
            &[(a, 1.0)],
            Quorum::All,
            Some(Duration::from_secs(60)),
        ))
        .unwrap();
    tokio::time::sleep(Duration::from_secs(59)).await;
    assert_eq!(
        runtime.governance.get(d.id).unwrap().status,
        DecisionStatus::Pending
    );
    assert_eq!(
        runtime.governance.outcome(d.id).await.unwrap(),
        DecisionStatus::Expired
    );
    assert!(matches!(
        runtime.governance.sign(d.id, a),
        Err(GovernanceError::NotPending {
            status: DecisionStatus::Expired,
            ..
        })
    ));
}

#[tokio::test]
async fn signers_on_the_bus_receive_a_signature_request() {
    let runtime = runtime(Config::default());
    let signer = AgentId::new();
    let mailbox = runtime.bus.register(signer, Layer::Top).unwrap();
    let d = runtime
        .governance
        .propose(proposal(&[(signer, 1.0)], Quorum::All, None))
        .unwrap();
    let request = mailbox.try_recv().expect("a signature request");
    assert_eq!(request.kind, MessageKind::SignatureRequest);
    assert_eq!(request.payload["decisionId"], json!(d.id));
}

fn conflict(parties: Vec<AgentId>) -> Conflict {
    Conflict {
        id: Uuid::new_v4(),
        task_id: Some("task-9".into()),
        description: "both mids want bottom-1".into(),
        parties,
        options: vec!["mid-1 keeps bottom-1".into(), "mid-2 gets bottom-1".into()],
    }
}

#[tokio::test]
async fn arbitration_follows_weight_and_breaks_ties_by_seniority() {
    let runtime = runtime(Config::default());
    let tops: Vec<AgentId> = (0..3).map(|_| AgentId::new()).collect();
    let voters: Vec<Voter> = tops
        .iter()
        .enumerate()
        .map(|(i, &agent)| Voter {
            agent,
            weight: if i == 2 { 2.0 } else { 1.0 },
            seniority: i,
        })
        .collect();
    let vote = |i: usize, option| Vote {
        voter: tops[i],
        option,
        reason: None,
    };

    // Weight decides: the junior (2.0) and the most senior (1.0) choose option 1 against 1.0 for 0.
    let parties = vec![AgentId::new(), AgentId::new()];
    let boxes: Vec<_> = parties
        .iter()
        .map(|p| runtime.bus.register(*p, Layer::Mid).unwrap())
        .collect();
    let result = runtime
        .governance
        .arbitrate(
            &conflict(parties.clone()),
            &voters,
            vec![vote(0, 1), vote(1, 0), vote(2, 1)],
        )
        .unwrap();
    assert_eq!(
        (result.chosen, result.tally.clone(), result.tie_broken_by),
        (1, vec![1.0, 3.0], None)
    );

    // 2.0 + 0 against 1.0 + 1.0: a tie, settled by the most senior voter (index 0) choosing 0.
    let tied = runtime
        .governance
        .arbitrate(
            &conflict(parties.clone()),
            &voters,
            vec![vote(0, 0), vote(1, 0), vote(2, 1)],
        )
        .unwrap();
    assert_eq!((tied.chosen, tied.tie_broken_by), (0, Some(tops[0])));
    let tied_other_way = runtime
        .governance
        .arbitrate(
            &conflict(parties.clone()),
            &voters,
            vec![vote(0, 1), vote(1, 1), vote(2, 0)],
        )
        .unwrap();
    assert_eq!(
        (tied_other_way.chosen, tied_other_way.tie_broken_by),
        (1, Some(tops[0]))
    );

    // The result reaches the parties and the global board.
    for mailbox in &boxes {
        let first = mailbox.try_recv().unwrap();
        assert_eq!(first.kind, MessageKind::ArbitrationResult);
        assert_eq!(first.payload["chosenOption"], "mid-2 gets bottom-1");
        assert_eq!(first.task_id.as_deref(), Some("task-9"));
    }
    let global = runtime
        .whiteboards
        .read(&Accessor::System, WhiteboardId::Global)
        .unwrap();
    assert_eq!(global.content.lines().count(), 3);
    assert!(global.content.contains("tie broken by seniority"));
}

#[tokio::test]
async fn invalid_votes_are_refused() {
    let runtime = runtime(Config::default());
    let top = AgentId::new();
    let voters = [Voter {
        agent: top,
        weight: 1.0,
        seniority: 0,
    }];
    let c = conflict(vec![]);
    for votes in [
        vec![],
        vec![Vote {
            voter: AgentId::new(),
            option: 0,
            reason: None,
        }],
        vec![Vote {
            voter: top,
            option: 5,
            reason: None,
        }],
        vec![
            Vote {
                voter: top,
                option: 0,
                reason: None,
            },
            Vote {
                voter: top,
                option: 1,
                reason: None,
            },
        ],
    ] {
        assert!(matches!(
            runtime.governance.arbitrate(&c, &voters, votes),
            Err(GovernanceError::InvalidArbitration { .. })
        ));
    }
}
