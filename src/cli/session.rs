//! Driving one submitted task to its end from the command line: follow the event
//! stream into the progress display, answer approvals by the chosen policy, cancel on
//! Ctrl-C, and gather what the summary needs once the task is over.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use conclave::config::{Config, LlmProvider};
use conclave::engine::{ClientName, Holder};
use conclave::engine::{Engine, SubmitTask};
use conclave::recovery::RecoveryEvent;
use conclave::runtime::usage::SpendCap;
use conclave::runtime::{
    ApprovalAnswer, ApprovalRequest, EventStream, RuntimeEvent, SubtaskStatus, TaskId, TaskOptions,
    TaskRecord, TaskStatus,
};
use conclave::store::Store;
use conclave::team::report::RecoveryFigures;
use conclave::wire::TaskDetail;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::mpsc;

use super::approve::{ApprovePolicy, Automatic, Terminal, safe_choice};
use super::progress::{Display, Names, Note, TaskView};

/// How often the live display is redrawn at most.
const FRAME: Duration = Duration::from_millis(120);

/// A task driven to its end.
pub struct Finished {
    pub view: TaskView,
    pub names: Names,
    pub detail: TaskDetail,
    /// The task's last checkpoint (subtask files, errors), when the store has it.
    pub record: Option<TaskRecord>,
    pub steps: Vec<RecoveryEvent>,
    pub figures: RecoveryFigures,
    /// Ctrl-C cancelled the task.
    pub interrupted: bool,
    /// The spend cap the task was held to, or why it was not; `None` for the scripted
    /// model without a price, which spends nothing.
    pub spend_cap: Option<SpendCap>,
    /// The files `conclave undo` would change, for a task that ended with its changes
    /// in place (shell commands' changes included, which are not "files written").
    pub undoable: Vec<String>,
}

impl Finished {
    /// True when the task completed and so did every one of its subtasks.
    pub fn all_completed(&self) -> bool {
        self.detail.summary.status == TaskStatus::Completed
            && !self.detail.summary.subtasks.is_empty()
            && self
                .detail
                .summary
                .subtasks
                .iter()
                .all(|s| s.status == SubtaskStatus::Completed)
    }
}

/// A front-end session on an engine: subscribed before anything is submitted, so that
/// no event of the task is missed.
pub struct Session {
    engine: Arc<Engine>,
    store: Store,
    events: EventStream,
    pub display: Display,
    names: Names,
    policy: ApprovePolicy,
    /// The options of the task it submits.
    options: TaskOptions,
}

/// What the question-asking task hands back.
struct Asked {
    terminal: Terminal,
    request: Arc<ApprovalRequest>,
    answer: Option<ApprovalAnswer>,
}

impl Session {
    pub fn new(engine: Arc<Engine>, store: Store, policy: ApprovePolicy, live: bool) -> Session {
        let events = engine.subscribe();
        let names = Names::new(engine.clone());
        Session {
            engine,
            store,
            events,
            display: Display::new(live),
            names,
            policy,
            options: TaskOptions::default(),
        }
    }

    /// The task it submits gets these options.
    pub fn with_options(mut self, options: TaskOptions) -> Session {
        self.options = options;
        self
    }

    /// Submits `description` and drives the task to its end. When the workspace already
    /// has this very task unfinished (a run that was killed), the resumed task is driven
    /// instead of a duplicate being submitted.
    pub async fn run(self, description: &str) -> Result<Finished, conclave::engine::EngineError> {
        let resumed = self
            .engine
            .tasks()
            .into_iter()
            .filter(|t| !t.status.is_finished() && t.parked.is_none())
            .find(|t| {
                self.engine
                    .task(&t.task_id.to_string())
                    .is_ok_and(|d| d.description == description)
            });
        let task = match resumed {
            Some(task) => {
                eprintln!(
                    "Resuming task {} from its last checkpoint ({} of {} subtasks done).",
                    task.task_id,
                    task.subtasks
                        .iter()
                        .filter(|s| s.status == conclave::runtime::SubtaskStatus::Completed)
                        .count(),
                    task.subtasks.len()
                );
                task.task_id
            }
            None => self.engine.submit(SubmitTask {
                description: description.to_string(),
                options: self.options.clone(),
                ..SubmitTask::default()
            })?,
        };
        self.drive(task).await
    }

    async fn drive(self, task: TaskId) -> Result<Finished, conclave::engine::EngineError> {
        let Session {
            engine,
            store,
            mut events,
            mut display,
            mut names,
            policy,
            options: _,
        } = self;
        let title = engine
            .task(&task.to_string())
            .map(|t| t.summary.title)
            .unwrap_or_default();
        let mut view = TaskView::new(task, title);
        let mut automatic = Automatic::new(policy);
        // Started at the first question: a process reading its terminal in the background
        // would be stopped by the shell (SIGTTIN) before anything needs asking.
        let mut terminal: Option<Terminal> = None;
        let mut queue: VecDeque<Arc<ApprovalRequest>> = engine
            .approvals()
            .into_iter()
            .filter(|a| a.task_id == task)
            .collect();
        let (asked_tx, mut asked_rx) = mpsc::unbounded_channel::<Asked>();
        let mut asking: Option<uuid::Uuid> = None;
        let mut interrupted = false;
        let waiter = engine.wait_for(task);
        tokio::pin!(waiter);
        let mut frame = tokio::time::interval(FRAME);
        frame.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut interrupt = ctrl_c();

        loop {
            // Answer (or start asking about) queued approvals.
            while asking.is_none() {
                let Some(request) = queue.pop_front() else {
                    break;
                };
                if engine
                    .approvals()
                    .iter()
                    .all(|a| a.approval_id != request.approval_id)
                {
                    continue; // answered or withdrawn meanwhile
                }
                if policy == ApprovePolicy::Ask && terminal.is_none() {
                    terminal = Some(Terminal::start());
                }
                match terminal.take() {
                    Some(term) if !term.is_closed() => {
                        display.pause();
                        asking = Some(request.approval_id);
                        let (tx, style) = (asked_tx.clone(), display.style());
                        tokio::spawn(async move {
                            let mut term = term;
                            let answer = term.ask(&request, style).await;
                            let _ = tx.send(Asked {
                                terminal: term,
                                request,
                                answer,
                            });
                        });
                    }
                    closed => {
                        terminal = closed;
                        let (answer, why) = if policy == ApprovePolicy::Ask {
                            let choice = safe_choice(&request);
                            (
                                ApprovalAnswer::new(choice),
                                format!(
                                    "{} — nobody can answer (stdin is closed)",
                                    choice.as_str()
                                ),
                            )
                        } else {
                            automatic.decide(&request)
                        };
                        answer_approval(&engine, &mut display, &request, answer, &why);
                    }
                }
            }

            tokio::select! {
                finished = &mut waiter => {
                    if let Err(e) = finished {
                        display.line(format!("conclave: lost track of the task: {e}"));
                    }
                    break;
                }
                event = events.recv() => match event {
                    Ok(event) => {
                        if let RuntimeEvent::ApprovalRequested(request) = &event
                            && request.task_id == task
                        {
                            queue.push_back(request.clone());
                        }
                        if let RuntimeEvent::ApprovalResolved { approval_id, decision: None, .. } = &event
                            && asking == Some(*approval_id)
                        {
                            display.line("The approval being asked about was withdrawn; the answer will be ignored.".into());
                        }
                        let notes = view.apply(&event, &mut names);
                        display.notes(notes);
                    }
                    Err(RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, "progress display fell behind; reading the task again");
                        if let Ok(detail) = engine.task(&task.to_string()) {
                            let notes = view.apply_summary(&detail.summary, &mut names);
                            display.notes(notes);
                        }
                        queue.extend(engine.approvals().into_iter().filter(|a| a.task_id == task));
                    }
                    Err(RecvError::Closed) => break,
                },
                Some(asked) = asked_rx.recv() => {
                    asking = None;
                    let Asked { terminal: term, request, answer } = asked;
                    let closed = answer.is_none();
                    terminal = Some(term);
                    display.resume();
                    let (answer, why) = match answer {
                        Some(answer) => {
                            let why = format!("{} (your answer)", answer.decision.as_str());
                            (answer, why)
                        }
                        None => {
                            let choice = safe_choice(&request);
                            (ApprovalAnswer::new(choice), format!("{} — no answer (stdin is closed)", choice.as_str()))
                        }
                    };
                    if closed {
                        display.line("stdin is closed: approvals are answered `reject`/`abort` from now on".into());
                    }
                    answer_approval(&engine, &mut display, &request, answer, &why);
                }
                _ = frame.tick() => display.tick(&view, &mut names),
                signal = &mut interrupt => {
                    if signal.is_err() {
                        // No signal handling here; never fire again.
                        interrupt = Box::pin(std::future::pending());
                        continue;
                    }
                    if interrupted {
                        display.finish(&view, &mut names);
                        eprintln!("conclave: interrupted twice; quitting without waiting");
                        std::process::exit(130);
                    }
                    interrupted = true;
                    display.line("Interrupted: cancelling the task (Ctrl-C again to quit at once)…".into());
                    if let Err(e) = engine.cancel(&task.to_string()) {
                        display.line(format!("conclave: {e}"));
                    }
                    interrupt = ctrl_c();
                }
            }
        }

        // What was published before the end.
        loop {
            match events.try_recv() {
                Ok(event) => {
                    let notes = view.apply(&event, &mut names);
                    display.notes(notes);
                }
                Err(TryRecvError::Lagged(_)) => continue,
                Err(_) => break,
            }
        }
        let detail = engine.task(&task.to_string())?;
        let notes = view.apply_summary(&detail.summary, &mut names);
        display.notes(notes);
        display.finish(&view, &mut names);

        if let Err(e) = store.flush().await {
            tracing::warn!("the store could not be flushed: {e}");
        }
        let record = store
            .tasks()
            .await
            .ok()
            .and_then(|tasks| tasks.into_iter().find(|t| t.id == task));
        let steps = store
            .recovery_steps(Some(task.to_string()))
            .await
            .unwrap_or_else(|_| view.recoveries.iter().map(|s| (**s).clone()).collect());
        let figures = RecoveryFigures::from(record.as_slice(), &steps);
        let undoable = match engine.undo_plan(&task.to_string()).await {
            Ok(plan) => plan.changing().map(|f| f.path.clone()).collect(),
            Err(_) => Vec::new(),
        };
        Ok(Finished {
            view,
            names,
            detail,
            record,
            steps,
            figures,
            interrupted,
            spend_cap: spend_cap(engine.config()),
            undoable,
        })
    }
}

fn spend_cap(config: &Config) -> Option<SpendCap> {
    let cap = SpendCap::of(config);
    let scripted = config.llm.provider == Some(LlmProvider::Scripted);
    (!(scripted && matches!(cap, SpendCap::Unpriced { .. }))).then_some(cap)
}

type Interrupt = std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>> + Send>>;

/// The next Ctrl-C.
fn ctrl_c() -> Interrupt {
    Box::pin(tokio::signal::ctrl_c())
}

fn answer_approval(
    engine: &Engine,
    display: &mut Display,
    request: &ApprovalRequest,
    answer: ApprovalAnswer,
    why: &str,
) {
    let id = request.approval_id.to_string();
    match engine.resolve_approval(&id, answer) {
        Ok(()) => display.notes(vec![Note::event(format!(
            "approval answered: {why} — {}",
            super::progress::clip(&request.title, 80)
        ))]),
        Err(e) => display.line(format!("approval not answered ({e})")),
    }
}

/// This process as the holder of a workspace, for `conclave <command>`: named so that an
/// editor refused the folder is told which command holds it.
pub fn holder(command: &str) -> Holder {
    Holder::this_process(
        Some(ClientName {
            name: format!("conclave {command}"),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        }),
        None,
    )
}

/// Opens the workspace's store, saying which file when it cannot.
pub fn open_store(workspace: &std::path::Path) -> anyhow::Result<Store> {
    let path = Store::default_path(workspace);
    // The error names the file and what to do about it.
    Store::open(&path).map_err(anyhow::Error::from)
}
