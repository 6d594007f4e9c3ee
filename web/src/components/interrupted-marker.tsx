/** Where a Stop cut an answer off: the history keeps the point, never the discarded text. */
export interface InterruptedMarkerProps {
  discardedChars: number | null;
}

/** "Previous response was interrupted", with how much unsaved text was discarded. */
export function InterruptedMarker({ discardedChars }: InterruptedMarkerProps) {
  return (
    <li className="marker" data-marker="interrupted_response">
      Previous response was interrupted
      {discardedChars ? ` · ${discardedChars} unsaved characters were discarded` : ""}
    </li>
  );
}
