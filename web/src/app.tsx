/**
 * The web app: threads on the left (a drawer on a phone); on the right the open thread's saved
 * history with each external action where it happened, the draft being streamed (kept apart and
 * marked as not saved), the composer with Stop (always in view), and after a Stop only the
 * actions the server can carry out. A new message may run another agent than the chat loop
 * (the picker next to the field); a plan agent's run shows its steps live, and its finished
 * sections as labelled sections. All state comes from the client SDK's chat session, except in
 * voice mode (a thread's live session: speech in, the agent's answers spoken or shown as text),
 * which takes the conversation's place until the user leaves it.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { TidemarkApiError, type ThreadView } from "../../src/client/index.js";
import { buildConfig, configFields, type ConfigValues } from "./agent-config.js";
import { AgentPicker } from "./components/agent-picker.js";
import { ApiKeyForm } from "./components/api-key-form.js";
import { ApprovalBar } from "./components/approval-bar.js";
import { BranchOrigin } from "./components/branch-origin.js";
import { Composer } from "./components/composer.js";
import { ConflictDialog } from "./components/conflict-dialog.js";
import { ConnectionBanner } from "./components/connection-banner.js";
import { Conversation } from "./components/conversation.js";
import { DeleteThreadDialog } from "./components/delete-thread-dialog.js";
import { ErrorNotice } from "./components/error-notice.js";
import { PlanView } from "./components/plan-view.js";
import { StopNotice } from "./components/stop-notice.js";
import { StoppedActions } from "./components/stopped-actions.js";
import { ThreadList } from "./components/thread-list.js";
import { VoicePanel } from "./components/voice-panel.js";
import { composerHint } from "./composer-hint.js";
import { createPageClient, storeApiKey, storedApiKey } from "./create-client.js";
import { describeError } from "./describe-error.js";
import { planPresentation } from "./plan-outline.js";
import { runStatusText } from "./run-status-text.js";
import { stopView } from "./stop-view.js";
import { threadTitle } from "./thread-title.js";
import { useAgents } from "./use-agents.js";
import { useChatSession, type ThreadChange } from "./use-chat-session.js";
import { usePerform } from "./use-perform.js";
import { useRoute } from "./use-route.js";
import { useThreadList } from "./use-thread-list.js";
import { useThreadSummary } from "./use-thread-summary.js";
import { useVoiceMode } from "./use-voice-mode.js";

/** The whole page: the thread list, the open thread's conversation and composer, and the dialogs. */
export function App() {
  const [apiKey, setApiKey] = useState(storedApiKey);
  const client = useMemo(() => createPageClient(apiKey), [apiKey]);
  const route = useRoute();
  const { openThread } = route;
  const threadList = useThreadList(client);
  const { refresh: refreshThreads } = threadList;
  // The address follows the session: "/" becomes the created thread's; a branch is a new page.
  const onThreadChange = useCallback(
    (change: ThreadChange) => {
      openThread(change.threadId, { replace: change.kind === "created" });
      refreshThreads();
    },
    [openThread, refreshThreads],
  );
  const { session, snapshot } = useChatSession(client, route.threadId, onThreadChange);
  const { busyAction, actionError, setActionError, perform } = usePerform();
  const [dismissedError, setDismissedError] = useState<Error | null>(null);
  const [shouldFocusStopped, setShouldFocusStopped] = useState(false);
  const [composerText, setComposerText] = useState("");
  const [isDrawerOpen, setIsDrawerOpen] = useState(false);
  const [deleting, setDeleting] = useState<{ thread: ThreadView; title: string } | null>(null);
  const composerInput = useRef<HTMLTextAreaElement>(null);
  const menuButton = useRef<HTMLButtonElement>(null);
  const agents = useAgents(client);
  const [agentName, setAgentName] = useState("chat");
  const [configValues, setConfigValues] = useState<Readonly<Record<string, ConfigValues>>>({});
  const chosenAgent = agents.find((agent) => agent.name === agentName);
  const fields = useMemo(() => (chosenAgent ? configFields(chosenAgent.config_schema) : []), [chosenAgent]);
  const agentConfig = useMemo(() => buildConfig(fields, configValues[agentName] ?? {}), [fields, configValues, agentName]);
  const hasConfigErrors = Object.keys(agentConfig.errors).length > 0;
  // The chat loop is the server's default: a plain message is sent exactly as before agents existed.
  const agentChoice = chosenAgent && agentName !== "chat" ? { agent: agentName, config: agentConfig.config } : {};
  // Leaving voice mode reloads the thread: its live turns' published messages are in the history now.
  const voice = useVoiceMode(snapshot?.threadId ?? null, apiKey, () => {
    if (session) void perform("reload", () => session.reload());
  });

  // The list shows titles, times and busy threads: read it again when the open thread moves.
  const listKey = `${snapshot?.threadId}:${snapshot?.stateVersion}:${snapshot?.run.isActive}:${snapshot?.history.length}`;
  useEffect(() => {
    if (snapshot?.threadId) refreshThreads();
  }, [listKey, refreshThreads, snapshot?.threadId]);

  const focusComposer = (): void => {
    requestAnimationFrame(() => composerInput.current?.focus());
  };
  /** Clears the message field once `text` was sent, unless the user has typed something else meanwhile. */
  const clearSent = (text: string): void => setComposerText((current) => (current === text ? "" : current));

  const onSend = (text: string): void => {
    if (!session) return;
    void perform("send", () => session.send(text, agentChoice)).then((run) => {
      if (run !== undefined) clearSent(text);
    });
  };

  const onStop = (): void => {
    if (!session) return;
    void perform("stop", async () => {
      const reply = await session.stop();
      if (session.getSnapshot().stop?.outcome === "cancelled") setShouldFocusStopped(true);
      return reply;
    });
  };

  const onResolveConflict = (choice: "reload" | "branch"): void => {
    const attempted = snapshot?.conflict?.attempted;
    if (!session || !attempted) return;
    void perform(choice, async () => {
      await session.resolveConflict(choice);
      return session.getSnapshot().conflict === null;
    }).then((isResolved) => {
      // "Start a branch" sent the message there: it must not stay in the field to be sent twice.
      if (isResolved && choice === "branch" && attempted.kind === "send") clearSent(attempted.text);
      focusComposer();
    });
  };

  const onContinue = (): void => {
    if (!session) return;
    void perform("continue", () => session.continueFromSavedPoint()).then(focusComposer);
  };

  const onChangeAndContinue = async (text: string): Promise<boolean> => {
    if (!session) return false;
    const run = await perform("change", () => session.changeAndContinue(text, agentChoice));
    if (run) focusComposer();
    return run !== undefined;
  };

  const onConfirm = (opId: string, outcome: "committed" | "not_committed"): void => {
    const threadId = snapshot?.threadId;
    if (!session || !threadId) return;
    void perform("confirm", async () => {
      await client.confirmOperation(threadId, opId, { outcome });
      await session.reload();
      return true;
    });
  };

  const onSelectThread = (threadId: string | null): void => {
    setIsDrawerOpen(false);
    setActionError(null);
    openThread(threadId);
  };

  const onNewThread = (): void => {
    onSelectThread(null);
    focusComposer();
  };

  const onCloseDrawer = (): void => {
    setIsDrawerOpen(false);
    menuButton.current?.focus();
  };

  const onRename = async (threadId: string, title: string): Promise<boolean> => {
    const renamed = await perform("rename", () => client.renameThread(threadId, title));
    refreshThreads();
    return renamed !== undefined;
  };

  const onConfirmDelete = (): void => {
    if (!deleting) return;
    const { thread_id: threadId } = deleting.thread;
    void perform("delete_thread", () => client.deleteThread(threadId)).then((deleted) => {
      setDeleting(null);
      if (deleted && threadId === (snapshot?.threadId ?? route.threadId)) openThread(null);
      refreshThreads();
    });
  };

  const onApiKey = (key: string): void => {
    storeApiKey(key);
    setApiKey(key);
  };

  const run = snapshot?.run;
  const actions = snapshot?.actions;
  const planShown = useMemo(() => planPresentation(snapshot), [snapshot]);
  const draft = snapshot?.draft && (!planShown || planShown.showsDraft(snapshot.draft)) ? snapshot.draft : null;
  const onShowSection = (messageId: string): void => {
    const section = document.getElementById(`section-${messageId}`);
    section?.scrollIntoView({ block: "start" });
    section?.focus({ preventScroll: true });
  };
  const stoppedRunIds = useMemo(() => {
    const ids = new Set<string>();
    for (const marker of snapshot?.markers ?? []) if (marker.type === "interrupted_response" && marker.run_id) ids.add(marker.run_id);
    if (run?.runId && (run.isCancelling || run.status === "cancelled")) ids.add(run.runId);
    return ids;
  }, [snapshot?.markers, run?.runId, run?.isCancelling, run?.status]);

  const title = snapshot?.threadId ? threadTitle(threadList.threads, snapshot.threadId) : "New thread";
  const origin = useThreadSummary(client, snapshot?.forkedFrom?.thread_id ?? null, threadList.threads);
  const isUnauthorized = TidemarkApiError.isInstance(threadList.error) && threadList.error.status === 401;
  const stops = stopView(snapshot);
  // While a Stop is unconfirmed its notice already says the server cannot be reached: one alert, not two.
  const backgroundError = snapshot?.error && snapshot.error !== dismissedError && !stops.isUnconfirmed ? describeError(snapshot.error) : null;
  const pendingApproval = run?.isAwaitingApproval ? run.pendingApproval : null;

  return (
    <div className={`app${isDrawerOpen ? " drawer-open" : ""}`}>
      <a className="skip-link" href="#composer-input">
        Skip to the message field
      </a>
      <ThreadList
        threads={threadList.threads}
        selectedThreadId={snapshot?.threadId ?? route.threadId}
        hasMore={threadList.hasMore}
        isLoading={threadList.isLoading}
        error={isUnauthorized || !threadList.error ? null : describeError(threadList.error)}
        isOpen={isDrawerOpen}
        onClose={onCloseDrawer}
        onSelect={onSelectThread}
        onCreate={onNewThread}
        onLoadMore={threadList.loadMore}
        onRename={onRename}
        onDelete={(thread, threadName) => setDeleting({ thread, title: threadName })}
      >
        {isUnauthorized && <ApiKeyForm hasKey={apiKey !== null} onSubmit={onApiKey} />}
      </ThreadList>
      <div className="drawer-backdrop" aria-hidden="true" onClick={onCloseDrawer} />
      <main className="main" aria-labelledby="conversation-title">
        <header className="conversation-header">
          <button
            type="button"
            ref={menuButton}
            className="menu-button"
            aria-label="Show the thread list"
            aria-controls="thread-drawer"
            aria-expanded={isDrawerOpen}
            onClick={() => setIsDrawerOpen(true)}
          >
            <span aria-hidden="true">☰</span>
          </button>
          <h2 id="conversation-title">{title}</h2>
          <button
            type="button"
            className="voice-toggle"
            aria-pressed={voice.session !== null}
            disabled={!snapshot?.threadId}
            title={snapshot?.threadId ? undefined : "Send a first message: voice mode runs on a thread"}
            onClick={voice.session ? voice.leave : voice.enter}
          >
            {voice.session ? "Leave voice mode" : "Voice mode"}
          </button>
        </header>
        {voice.session && voice.snapshot && <VoicePanel session={voice.session} snapshot={voice.snapshot} />}
        {!voice.session && (
          <>
            {snapshot?.forkedFrom && (
              <BranchOrigin
                origin={snapshot.forkedFrom}
                originTitle={origin.title}
                isOriginDeleted={origin.isDeleted}
                canContinue={stops.isOriginsStop && actions?.canContinue === true}
                isBusy={busyAction !== null}
                onOpenOrigin={(threadId) => onSelectThread(threadId)}
                onContinue={onContinue}
              />
            )}
            {snapshot && !stops.isUnconfirmed && (
              <ConnectionBanner
                status={snapshot.connection.status}
                failure={snapshot.connection.failure}
                onReload={() => void perform("reload", () => session!.reload())}
              />
            )}
            <Conversation
              threadId={snapshot?.threadId ?? null}
              history={snapshot?.history ?? []}
              markers={snapshot?.markers ?? []}
              operations={snapshot?.operations ?? []}
              pendingApproval={pendingApproval}
              stoppedRunIds={stoppedRunIds}
              draft={draft}
              isStopUnconfirmed={stops.isUnconfirmed}
              isWaiting={run?.isRunning === true && !stops.isPending && !planShown}
              isBusy={busyAction !== null}
              onConfirm={onConfirm}
              tailKey={`${run?.status}:${stops.panel}:${stops.isTooLate}:${actionError}:${backgroundError}:${planShown?.summary}`}
              plan={
                planShown && (
                  <PlanView plan={planShown.plan} phase={planShown.phase} summary={planShown.summary} sectionOf={planShown.sectionOf} onShowSection={onShowSection} />
                )
              }
            >
              {run?.status === "failed" && (
                <div className="panel error" role="alert">
                  <p>
                    The run failed{run.failure ? ` (${run.failure.reason})` : ""}. {run.failure?.message} Your message is saved; send it again to retry.
                  </p>
                </div>
              )}
              {stops.isTooLate && (
                <div className="panel" role="status">
                  <p>Too late to stop: the answer had already been completed and saved.</p>
                </div>
              )}
              {stops.panel && actions && (
                <StoppedActions
                  phase={stops.panel}
                  resumeVersion={snapshot?.resumePoint?.stateVersion ?? null}
                  activeOperation={run?.activeOperation ?? null}
                  draftStatus={draft?.status ?? null}
                  canContinue={actions.canContinue}
                  canChangeAndContinue={actions.canChangeAndContinue}
                  canBranch={actions.canBranch}
                  canDeleteDraft={actions.canDeleteDraft && draft !== null}
                  canSaveWhatISaw={actions.canSaveWhatISaw && draft !== null}
                  busyAction={busyAction}
                  shouldFocus={shouldFocusStopped}
                  onFocused={() => setShouldFocusStopped(false)}
                  onContinue={onContinue}
                  onChangeAndContinue={onChangeAndContinue}
                  onBranch={() => void perform("branch", () => session!.branch()).then(focusComposer)}
                  onDeleteDraft={() => void perform("delete", () => session!.deleteDraft())}
                  onSaveWhatISaw={() => void perform("save", () => session!.saveWhatISaw())}
                />
              )}
              {/* One alert for one problem: a refused action and a failed read that say the same are shown once. */}
              {actionError && <ErrorNotice message={actionError} onDismiss={() => setActionError(null)} />}
              {backgroundError && backgroundError !== actionError && (
                <ErrorNotice
                  message={backgroundError}
                  onDismiss={() => setDismissedError(snapshot?.error ?? null)}
                  onReload={() => void perform("reload", () => session!.reload())}
                />
              )}
            </Conversation>
            <p className="visually-hidden" role="status">
              {runStatusText(snapshot, planShown?.statusText ?? null)}
            </p>
            <Composer
              inputRef={composerInput}
              text={composerText}
              onTextChange={setComposerText}
              canSend={actions?.canSend === true && busyAction === null && !hasConfigErrors}
              canStop={actions?.canStop === true}
              isStopping={run?.isCancelling === true || stops.isPending}
              hint={hasConfigErrors ? "Check the agent's settings above the message field." : composerHint(snapshot, stops, planShown !== null)}
              onSend={onSend}
              onStop={onStop}
              options={
                agents.length > 1 && (
                  <AgentPicker
                    agents={agents}
                    agent={agentName}
                    fields={fields}
                    values={configValues[agentName] ?? {}}
                    errors={agentConfig.errors}
                    onAgentChange={setAgentName}
                    onValueChange={(name, value) => setConfigValues((current) => ({ ...current, [agentName]: { ...current[agentName], [name]: value } }))}
                  />
                )
              }
            >
              {stops.isUnconfirmed && <StopNotice failure={snapshot?.stop?.failure ?? null} />}
              {pendingApproval && !stops.isPending && (
                <ApprovalBar
                  approval={pendingApproval}
                  busyAction={busyAction}
                  onApprove={() => void perform("approve", () => session!.approve())}
                  onReject={() => void perform("reject", () => session!.reject())}
                />
              )}
            </Composer>
          </>
        )}
      </main>
      {snapshot?.conflict && (
        <ConflictDialog
          isOpen
          expectedVersion={snapshot.stateVersion}
          currentVersion={snapshot.conflict.currentStateVersion}
          canBranch={snapshot.conflict.forkCheckpointId !== null}
          isBusy={busyAction === "reload" || busyAction === "branch"}
          onReload={() => onResolveConflict("reload")}
          onBranch={() => onResolveConflict("branch")}
        />
      )}
      {deleting && (
        <DeleteThreadDialog title={deleting.title} isBusy={busyAction === "delete_thread"} onConfirm={onConfirmDelete} onCancel={() => setDeleting(null)} />
      )}
    </div>
  );
}
