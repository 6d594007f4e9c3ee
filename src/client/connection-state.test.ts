import { describe, expect, it } from "vitest";
import { canConnectionTransition, connectionFlags, type ConnectionStatus } from "./connection-state.js";

describe("the connection state machine", () => {
  it.each<[ConnectionStatus, ConnectionStatus, boolean]>([
    ["idle", "connecting", true],
    ["idle", "connected", false],
    ["connecting", "connected", true],
    ["connected", "reconnecting", true],
    ["reconnecting", "connected", true],
    ["reconnecting", "failed", true],
    ["connected", "disconnected", true],
    ["connected", "connecting", false], // a new stream starts from idle
    ["failed", "connected", false], // a failed stream stays failed until a new one opens
    ["failed", "connecting", true],
    ["disconnected", "reconnecting", false], // the user closed it: nothing reconnects on its own
    ["disconnected", "connecting", true],
  ])("%s → %s: %s", (from, to, allowed) => {
    expect(canConnectionTransition(from, to)).toBe(allowed);
  });

  it("derives its flags from the status alone", () => {
    expect(connectionFlags("reconnecting")).toEqual({ isConnected: false, isConnecting: true, isFailed: false, isDisconnected: false });
    expect(connectionFlags("connected")).toMatchObject({ isConnected: true, isConnecting: false });
    expect(connectionFlags("failed")).toMatchObject({ isFailed: true, isDisconnected: false });
    expect(connectionFlags("disconnected")).toMatchObject({ isFailed: false, isDisconnected: true });
    expect(connectionFlags("idle")).toEqual({ isConnected: false, isConnecting: false, isFailed: false, isDisconnected: false });
  });
});
