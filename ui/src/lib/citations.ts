/** A piece of answer text: plain words or a citation marker. */
export type Segment = { kind: "text"; text: string } | { kind: "cite"; number: number };

// `[1]`, `[1, 2]`, `[1，2]` (the verified answer always has one number per bracket; a streamed
// draft may not).
const MARKER = /\[(\d{1,3}(?:\s*[,，]\s*\d{1,3})*)\]/g;

/** Splits answer text into text and citation markers. */
export function splitCitations(text: string): Segment[] {
  const out: Segment[] = [];
  let last = 0;
  for (const m of text.matchAll(MARKER)) {
    const at = m.index ?? 0;
    if (at > last) out.push({ kind: "text", text: text.slice(last, at) });
    for (const n of m[1].split(/[,，]/)) {
      out.push({ kind: "cite", number: Number(n.trim()) });
    }
    last = at + m[0].length;
  }
  if (last < text.length) out.push({ kind: "text", text: text.slice(last) });
  return out;
}

/** The answer as plain text for the clipboard, with its numbered sources listed after it. */
export function answerForClipboard(
  text: string,
  sources: { number: number; title: string; page: number | null }[],
  pageLabel: (page: number) => string,
): string {
  if (!sources.length) return text;
  const list = sources
    .map((s) => `[${s.number}] ${s.title}${s.page != null ? `, ${pageLabel(s.page)}` : ""}`)
    .join("\n");
  return `${text}\n\n${list}`;
}
