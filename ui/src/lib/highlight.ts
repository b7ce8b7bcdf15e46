import type { DocumentPreview } from "../api";

export type Highlighted = { before: string; passage: string; after: string } | null;

/** Splits a previewed document around the passage of `chunkId`. Offsets are in characters
 * (Unicode code points) of `text`, so the text is sliced by code points, not UTF-16 units. */
export function splitAtPassage(doc: DocumentPreview, chunkId: number | null): Highlighted {
  if (chunkId == null) return null;
  const p = doc.passages.find((x) => x.chunkId === chunkId);
  if (!p) return null;
  const chars = Array.from(doc.text);
  const start = Math.max(0, Math.min(p.charStart, chars.length));
  const end = Math.max(start, Math.min(p.charEnd, chars.length));
  if (end === start) return null;
  return {
    before: chars.slice(0, start).join(""),
    passage: chars.slice(start, end).join(""),
    after: chars.slice(end).join(""),
  };
}
