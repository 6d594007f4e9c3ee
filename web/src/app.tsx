/**
 * The web app: threads on the left; on the right the open thread's saved history, the draft
 * being streamed (kept apart and marked as not saved), the composer with Stop, and after a Stop
 * only the actions the server can carry out. All state comes from the client SDK's chat session.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { TidemarkApiError, type ChatSnapshot } from "../../src/client/index.js";
import { ApiKeyForm } from "./components/api-key-form.js";
import { Composer } from "./components/composer.js";
import { ConflictDialog } from "./components/conflict-dialog.js";
import { ConnectionBanner } from "./components/connection-banner.js";
import { Conversation } from "./components/conversation.js";
import { ErrorNotice } from "./components/error-notice.js";
import { OperationList } from "./components/operation-list.js";
import { StoppedActions } from "./components/stopped-actions.js";
import { ThreadList } from "./components/thread-list.js";
import { createPageClient, storeApiKey, storedApiKey } from "./create-client.js";
import { threadTitle } from "./thread-title.js";
import { useChatSession, type ThreadChange } from "./use-chat-session.js";
import { useRoute } from "./use-route.js";
import { useThreadList } from "./use-thread-list.js";

/** What went wrong, in words a user can act on (the server's messages are already safe to show). */
function describeError(error: unknown): string {
  if (TidemarkApiError.isInstance(error)) return error.message;
  if (error instanceof TypeError) return "The server cannot be reached. Check that Tidemark is running, then try again.";
  return error instanceof Error ? error.message : String(error);
}

/** What the run is doing, for the status line screen readers announce. */
function runStatusText(snapshot: ChatSnapshot | null): string {
  switch (snapshot?.run.status) {
    case "starting":
    case "queued":
      return "Sending…";
    case "running":
      return "The assistant is answering.";
    case "interrupted":
      return "The run waits for your approval.";
    case "cancel_requested":
    case "cancelling":
      return "Stopping…";
    case "cancelled":
      return "Stopped. The unfinished answer was not saved.";
    case "completed":
      return "The answer is saved.";
    case "failed":
      return "The run failed.";
    default:
      return "";
  }
}

/** The whole page: the thread list, the open thread's conversation and composer, and the conflict dialog. */
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
  const [busyAction, setBusyAction] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);
  const [dismissedError, setDismissedError] = useState<Error | null>(null);
  const [shouldFocusStopped, setShouldFocusStopped] = useState(false);
  const composerInput = useRef<HTMLTextAreaElement>(null);

  // The list shows titles, times and busy threads: read it again when the open thread moves.
  const listKey = `${snapshot?.threadId}:${snapshot?.stateVersion}:${snapshot?.run.isActive}`;
  useEffect(() => {
    if (snapshot?.threadId) refreshThreads();
  }, [listKey, refreshThreads, snapshot?.threadId]);

  const perform = useCallback(async <T,>(name: string, work: () => Promise<T>): Promise<T | undefined> => {
    setBusyAction(name);
    setActionError(null);
    try {
      return await work();
    } catch (error) {
      setActionError(describeError(error));
      return undefined;
    } finally {
      setBusyAction(null);
    }
  }, []);

  const focusComposer = (): void => {
    requestAnimationFrame(() => composerInput.current?.focus());
  };

  const onSend = async (text: string): Promise<boolean> => {
    if (!session) return false;
    return (await perform("send", () => session.send(text))) !== undefined;
  };

  const onStop = (): void => {
    if (!session) return;
    void perform("stop", async () => {
      const reply = await session.stop();
      setShouldFocusStopped(true);
      return reply;
    });
  };

  const onBranch = (): void => {
    if (!session) return;
    void perform("branch", () => session.branch()).then(focusComposer);
  };

  const onResolveConflict = (choice: "reload" | "branch"): void => {
    if (!session) return;
    void perform(choice === "reload" ? "reload" : "branch", () => session.resolveConflict(choice)).then(focusComposer);
  };

  const onContinue = (): void => {
    if (!session) return;
    void perform("continue", () => session.continueFromSavedPoint()).then(focusComposer);
  };

  const onChangeAndContinue = async (text: string): Promise<boolean> => {
    if (!session) return false;
    const run = await perform("change", () => session.changeAndContinue(text));
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

  const onNewThread = (): void => {
    openThread(null);
    setActionError(null);
    focusComposer();
  };

  const onApiKey = (key: string): void => {
    storeApiKey(key);
    setApiKey(key);
  };

  const run = snapshot?.run;
  const actions = snapshot?.actions;
  const draft = snapshot?.draft ?? null;
  const stoppedRunIds = useMemo(() => {
    const ids = new Set<string>();
    for (const marker of snapshot?.markers ?? []) if (marker.type === "interrupted_response" && marker.run_id) ids.add(marker.run_id);
    if (run?.runId && (run.isCancelling || run.status === "cancelled")) ids.add(run.runId);
    return ids;
  }, [snapshot?.markers, run?.runId, run?.isCancelling, run?.status]);

  const stoppedPhase: "stopping" | "stopped" | null = !run
    ? null
    : run.isCancelling
      ? "stopping"
      : run.status === "cancelled" || (run.status === "idle" && snapshot?.resumePoint)
        ? "stopped"
        : null;
  const lastUserRequest = [...(snapshot?.history ?? [])].reverse().find((message) => message.role === "user")?.content ?? "";
  const title = snapshot?.threadId ? threadTitle(threadList.threads, snapshot.threadId) : "New thread";
  const isUnauthorized = TidemarkApiError.isInstance(threadList.error) && threadList.error.status === 401;
  const backgroundError = snapshot?.error && snapshot.error !== dismissedError ? snapshot.error : null;

  const composerHint = !run
    ? null
    : snapshot?.conflict
      ? "The thread changed elsewhere: reload it or start a branch first."
      : run.isAwaitingApproval
        ? "The run waits for your decision on the external action above. Stop also works."
        : run.isCancelling
          ? "Stopping… the thread can be used again as soon as the run has really stopped."
          : run.isRunning
            ? "The answer is being written. Stop (or Esc) ends it; nothing unfinished is saved."
            : null;

  return (
    <div className="app">
      <a className="skip-link" href="#composer-input">
        Skip to the message field
      </a>
      <ThreadList
        threads={threadList.threads}
        selectedThreadId={snapshot?.threadId ?? route.threadId}
        hasMore={threadList.hasMore}
        isLoading={threadList.isLoading}
        error={isUnauthorized ? null : (threadList.error?.message ?? null)}
        onSelect={(threadId) => openThread(threadId)}
        onCreate={onNewThread}
        onLoadMore={threadList.loadMore}
      >
        {isUnauthorized && <ApiKeyForm hasKey={apiKey !== null} onSubmit={onApiKey} />}
      </ThreadList>
      <main className="main" aria-labelledby="conversation-title">
        <header className="conversation-header">
          <h2 id="conversation-title">{title}</h2>
          {snapshot?.stateVersion != null && <span className="version">version {snapshot.stateVersion}</span>}
        </header>
        {snapshot && (
          <ConnectionBanner
            status={snapshot.connection.status}
            failure={snapshot.connection.failure}
            onReload={() => void perform("reload", () => session!.reload())}
          />
        )}
        <div className="conversation-body">
          <Conversation
            threadId={snapshot?.threadId ?? null}
            history={snapshot?.history ?? []}
            markers={snapshot?.markers ?? []}
            draft={draft}
            isWaiting={run?.isRunning === true}
            tailKey={`${run?.status}:${snapshot?.operations.length}:${actionError}`}
          />
          {snapshot && (run?.pendingApproval || snapshot.operations.length > 0) && (
            <OperationList
              operations={snapshot.operations}
              pendingApproval={run?.isAwaitingApproval ? run.pendingApproval : null}
              stoppedRunIds={stoppedRunIds}
              busyAction={busyAction}
              onApprove={() => void perform("approve", () => session!.approve())}
              onReject={() => void perform("reject", () => session!.reject())}
              onConfirm={onConfirm}
            />
          )}
          {run?.status === "failed" && (
            <div className="panel error" role="alert">
              <p>
                The run failed{run.failure ? ` (${run.failure.reason})` : ""}. {run.failure?.message} Your message is saved; send it again to retry.
              </p>
            </div>
          )}
          {snapshot?.lastCancel?.already_terminal && run?.status === "completed" && (
            <div className="panel" role="status">
              <p>Too late to stop: the answer had already been completed and saved.</p>
            </div>
          )}
          {stoppedPhase && actions && (
            <StoppedActions
              phase={stoppedPhase}
              acceptedVersion={snapshot?.lastCancel?.accepted_state_version ?? snapshot?.resumePoint?.stateVersion ?? null}
              activeOperation={run?.activeOperation ?? null}
              draftStatus={draft?.status ?? null}
              canContinue={actions.canContinue}
              canChangeAndContinue={actions.canChangeAndContinue}
              canBranch={actions.canBranch}
              canDeleteDraft={actions.canDeleteDraft}
              canSaveWhatISaw={actions.canSaveWhatISaw}
              busyAction={busyAction}
              lastRequest={lastUserRequest}
              shouldFocus={shouldFocusStopped}
              onFocused={() => setShouldFocusStopped(false)}
              onContinue={onContinue}
              onChangeAndContinue={onChangeAndContinue}
              onBranch={onBranch}
              onDeleteDraft={() => void perform("delete", () => session!.deleteDraft())}
              onSaveWhatISaw={() => void perform("save", () => session!.saveWhatISaw())}
            />
          )}
          {actionError && <ErrorNotice message={actionError} onDismiss={() => setActionError(null)} />}
          {backgroundError && (
            <ErrorNotice
              message={describeError(backgroundError)}
              onDismiss={() => setDismissedError(backgroundError)}
              onReload={() => void perform("reload", () => session!.reload())}
            />
          )}
        </div>
        <p className="visually-hidden" role="status">
          {runStatusText(snapshot)}
        </p>
        <Composer
          inputRef={composerInput}
          canSend={actions?.canSend === true && busyAction === null}
          canStop={actions?.canStop === true}
          isStopping={run?.isCancelling === true || busyAction === "stop"}
          hint={composerHint}
          onSend={onSend}
          onStop={onStop}
        />
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
    </div>
  );
}
