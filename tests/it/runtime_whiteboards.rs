//! Whiteboards: the permission matrix, versions, events and stored history.

use conclave::config::Config;
use conclave::runtime::{
    Accessor, AgentId, EventBus, Layer, Operation, RuntimeEvent, WhiteboardError, WhiteboardId,
    Whiteboards,
};

use crate::support::common::{next_event, runtime};

#[test]
fn the_permission_matrix() {
    let boards = Whiteboards::new(EventBus::default(), None);
    let top = AgentId::new();
    let mid = AgentId::new();
    let bottom = AgentId::new();
    let other_bottom = AgentId::new();
    for id in [top, mid, bottom, other_bottom] {
        boards.create(WhiteboardId::Agent(id));
    }
    let as_top = Accessor::Agent {
        id: top,
        layer: Layer::Top,
        subordinates: vec![mid],
    };
    let as_mid = Accessor::Agent {
        id: mid,
        layer: Layer::Mid,
        subordinates: vec![bottom],
    };
    let as_bottom = Accessor::Agent {
        id: bottom,
        layer: Layer::Bottom,
        subordinates: vec![],
    };

    use Operation::*;
    use WhiteboardId::{Agent, Global, Layer as L};
    // (who, operation, board, allowed)
    let cases = [
        // An agent replaces its own board and its layer's, nothing else.
        (&as_mid, Replace, Agent(mid), true),
        (&as_mid, Replace, L(Layer::Mid), true),
        (&as_mid, Replace, Global, false),
        (&as_mid, Replace, L(Layer::Top), false),
        (&as_mid, Replace, Agent(bottom), false),
        (&as_top, Replace, Agent(mid), false),
        // It appends to those and to global.
        (&as_bottom, Append, Global, true),
        (&as_bottom, Append, Agent(bottom), true),
        (&as_bottom, Append, L(Layer::Bottom), true),
        (&as_bottom, Append, L(Layer::Mid), false),
        (&as_bottom, Append, Agent(other_bottom), false),
        // It reads global, its layer's, its own and its subordinates'.
        (&as_mid, Read, Global, true),
        (&as_mid, Read, L(Layer::Mid), true),
        (&as_mid, Read, Agent(mid), true),
        (&as_mid, Read, Agent(bottom), true),
        (&as_mid, Read, Agent(other_bottom), false),
        (&as_mid, Read, L(Layer::Top), false),
        (&as_mid, Read, L(Layer::Bottom), false),
        (&as_mid, Read, Agent(top), false),
        (&as_bottom, Read, Agent(mid), false),
        (&as_bottom, Read, Agent(other_bottom), false),
        (&as_bottom, Read, L(Layer::Mid), false),
        // Top agents read every board.
        (&as_top, Read, Agent(other_bottom), true),
        (&as_top, Read, L(Layer::Bottom), true),
        (&as_top, Read, L(Layer::Mid), true),
        // The runtime itself may do anything.
        (&Accessor::System, Replace, Global, true),
        (&Accessor::System, Read, Agent(bottom), true),
    ];
    for (who, operation, board, allowed) in cases {
        let result = match operation {
            Read => boards.read(who, board).map(|_| ()),
            Replace => boards.replace(who, board, "x").map(|_| ()),
            Append => boards.append(who, board, "x").map(|_| ()),
        };
        match (allowed, result) {
            (true, Ok(())) => {}
            (
                false,
                Err(WhiteboardError::PermissionDenied {
                    operation: op,
                    board: b,
                    ..
                }),
            ) => {
                assert_eq!((op, b), (operation, board));
            }
            (allowed, result) => {
                panic!("{who:?} {operation} {board}: expected allowed={allowed}, got {result:?}")
            }
        }
    }
}

#[test]
fn an_unknown_board_is_not_found() {
    let boards = Whiteboards::new(EventBus::default(), None);
    let ghost = WhiteboardId::Agent(AgentId::new());
    assert_eq!(
        boards.read(&Accessor::System, ghost),
        Err(WhiteboardError::NotFound(ghost.to_string()))
    );
}

#[tokio::test]
async fn changes_are_versioned_published_and_stored() {
    let runtime = runtime(Config::default());
    let mut events = runtime.events.subscribe();
    let bottom = AgentId::new();
    runtime.whiteboards.create(WhiteboardId::Agent(bottom));
    let me = Accessor::Agent {
        id: bottom,
        layer: Layer::Bottom,
        subordinates: vec![],
    };
    let board = WhiteboardId::Agent(bottom);

    let v1 = runtime.whiteboards.replace(&me, board, "# Notes").unwrap();
    let v2 = runtime
        .whiteboards
        .append(&me, board, "- wrote main.rs")
        .unwrap();
    assert_eq!((v1.version, v2.version), (1, 2));
    assert_eq!(&*v2.content, "# Notes\n- wrote main.rs");
    let global = runtime
        .whiteboards
        .append(&me, WhiteboardId::Global, "bottom checked in")
        .unwrap();
    assert_eq!(global.version, 1);

    let changed = next_event(&mut events, |e| {
        matches!(e, RuntimeEvent::WhiteboardChanged { version: 2, .. })
    })
    .await;
    let RuntimeEvent::WhiteboardChanged { id, content, .. } = changed else {
        unreachable!()
    };
    assert_eq!((id, &*content), (board, "# Notes\n- wrote main.rs"));

    let history = runtime
        .store
        .as_ref()
        .unwrap()
        .whiteboard_history(board.to_string())
        .await
        .unwrap();
    assert_eq!(
        history,
        vec![
            (1, "# Notes".to_string()),
            (2, "# Notes\n- wrote main.rs".to_string())
        ]
    );
    let ids: Vec<String> = runtime
        .whiteboards
        .list()
        .iter()
        .map(|b| b.id.to_string())
        .collect();
    assert!(ids.contains(&"global".to_string()) && ids.contains(&format!("agent:{bottom}")));
}
