// A fake back end for working on the UI in a plain browser (`npm run dev`, no Tauri): it answers
// the same commands with made-up data, streams answers and emits ingestion events. Loaded only
// in development outside the app window (see main.tsx); never part of a production build.

import type { Channel } from "@tauri-apps/api/core";
import { emit } from "@tauri-apps/api/event";
import { mockIPC, mockWindows } from "@tauri-apps/api/mocks";
import type {
  Answer,
  ApiServerView,
  AppInfo,
  ChatEvent,
  DocumentRow,
  DroppedFile,
  FolderNode,
  IngestEvent,
  LlmSetting,
  ModelRow,
  SearchModelsSetting,
  Source,
  TraceView,
  UserRow,
  WebSourceRow,
} from "../api";

type Args = Record<string, unknown>;

const ROOT = "/home/demo/Company";

interface MockUser extends UserRow {
  key: string;
}

const users: MockUser[] = [
  { id: "default", displayName: "Owner", role: "ROOT", groups: [], key: "kh_root" },
  { id: "alice", displayName: "Alice Chen", role: "USER", groups: ["team:hr"], key: "kh_alice" },
  { id: "bob", displayName: "Bob Li", role: "ADMIN", groups: ["team:eng", "project:apollo"], key: "kh_bob" },
];
let me = users[0];
let llm: AppInfo["models"]["llm"] = { kind: "default" };
let apiServer = { enabled: false, port: 7878 };

/** The HTTP API's status: port 8080 plays a port another program holds. */
function apiServerView(): ApiServerView {
  const inUse = apiServer.enabled && apiServer.port === 8080;
  const running = apiServer.enabled && !inUse;
  return {
    ...apiServer,
    running,
    url: running ? `http://127.0.0.1:${apiServer.port}` : null,
    error: inUse
      ? "Cannot listen on 127.0.0.1:8080: another program already uses port 8080. Choose another port."
      : null,
  };
}

const handbook = [
  "Employee Handbook",
  "",
  "1. Working hours",
  "Core hours are 10:00 to 16:00. Outside core hours you may plan your day freely, as long as your team knows how to reach you.",
  "",
  "2. Travel",
  "Business travel must be approved by your manager before booking. Economy class is the default for flights under six hours. Hotel costs are reimbursed up to 900 CNY per night in tier-1 cities and 600 CNY elsewhere.",
  "",
  "3. Expenses",
  "Submit expense claims within 30 days with the original receipts. Claims older than 90 days are not reimbursed.",
  "",
  "4. Leave",
  "Full-time employees get 15 days of paid annual leave, plus 1 day for each year of service, up to 20 days.",
].join("\n");

const policyZh = [
  "差旅报销制度（2024 版）",
  "",
  "第一条 出差须事先经直属经理审批。",
  "第二条 一线城市住宿标准为每晚 900 元以内，其他城市为每晚 600 元以内。",
  "第三条 报销须在出差结束后 30 天内提交，并附原始票据。😀 超过 90 天的单据不予报销。",
].join("\n");

interface MockDoc extends DocumentRow {
  text: string;
  passages: { chunkId: number; find: string; heading: string[]; page: number | null }[];
  scopes: string;
}

const docs: MockDoc[] = [
  {
    id: 1,
    title: "Employee Handbook",
    path: `${ROOT}/HR/handbook.pdf`,
    kind: "pdf",
    status: "indexed",
    error: null,
    chunks: 4,
    updatedAtMs: Date.now() - 86_400_000 * 3,
    owner: "default",
    text: handbook,
    scopes: "public",
    passages: [
      { chunkId: 11, find: "Core hours are", heading: ["Employee Handbook", "Working hours"], page: 1 },
      { chunkId: 12, find: "Business travel must", heading: ["Employee Handbook", "Travel"], page: 2 },
      { chunkId: 13, find: "Submit expense claims", heading: ["Employee Handbook", "Expenses"], page: 2 },
      { chunkId: 14, find: "Full-time employees", heading: ["Employee Handbook", "Leave"], page: 3 },
    ],
  },
  {
    id: 2,
    title: "差旅报销制度",
    path: `${ROOT}/HR/policies/travel-zh.docx`,
    kind: "docx",
    status: "indexed",
    error: null,
    chunks: 2,
    updatedAtMs: Date.now() - 3_600_000,
    owner: "default",
    text: policyZh,
    scopes: "team:hr",
    passages: [
      { chunkId: 21, find: "第二条", heading: ["差旅报销制度"], page: null },
      { chunkId: 22, find: "第三条", heading: ["差旅报销制度"], page: null },
    ],
  },
  {
    id: 3,
    title: "Apollo design notes",
    path: `${ROOT}/Engineering/apollo.md`,
    kind: "markdown",
    status: "pending",
    error: null,
    chunks: 0,
    updatedAtMs: Date.now() - 60_000,
    owner: "bob",
    text: "Apollo is the new search backend.",
    scopes: "project:apollo",
    passages: [],
  },
  {
    id: 4,
    title: "scan-2019.pdf",
    path: `${ROOT}/Engineering/scan-2019.pdf`,
    kind: "pdf",
    status: "failed",
    error: "the PDF has no text layer (scanned image); OCR is off",
    chunks: 0,
    updatedAtMs: Date.now() - 86_400_000 * 40,
    owner: "default",
    text: "",
    scopes: "public",
    passages: [],
  },
];

const acl = new Map<string, string>([
  ["", "public"],
  ["HR", "team:hr"],
]);
let watched = [ROOT];
const webSources: WebSourceRow[] = [];
let paused = false;
const conversations = new Map<string, { id: string; owner: string; title: string; updatedAtMs: number; answers: Answer[] }>();
const traces = new Map<string, TraceView>();
const cancelled = new Set<string>();
const dataSources: { name: string; path: string; scopes: string[]; tenantColumn: string | null }[] = [
  { name: "sales", path: "/home/demo/sales.sqlite", scopes: ["team:sales"], tenantColumn: "region" },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function fail(kind: string, message: string): never {
  throw { kind, message };
}

function isAdmin() {
  return me.role === "ROOT" || me.role === "ADMIN";
}

function canRead(d: MockDoc): boolean {
  if (isAdmin() || d.owner === me.id) return true;
  return d.scopes.split(" ").some((s) => s === "public" || me.groups.includes(s) || s === `user:${me.id}`);
}

let search: AppInfo["models"]["search"] = { embedder: "default", reranker: null, gpu: false };
const library: ModelRow[] = [
  { name: "multilingual-e5-small", role: "embedder", isDefault: true, description: "Chinese + English", sizeBytes: 470_000_000, state: "ok", inUse: true },
  { name: "qwen2.5-coder-0.5b-instruct", role: "llm", isDefault: false, description: "Answers", sizeBytes: 491_000_000, state: "missing", inUse: false },
];

// The first-run choice: asked once per browser session of the mock.
let welcomed = false;

function appInfo(): AppInfo {
  return {
    user: me.id,
    displayName: me.displayName,
    role: me.role,
    isAdmin: isAdmin(),
    account: "default",
    requiresKey: true,
    groups: me.groups,
    dataDir: "/home/demo/.local/share/knowhub",
    version: "0.1.0",
    readOnly: false,
    firstRun: !welcomed,
    models: {
      embedder: "bge-small-zh-v1.5",
      reranker: "bge-reranker-base",
      llm,
      llmLoaded: llm.kind === "off" ? null : "qwen2.5-1.5b-instruct-q4",
      installedLlms: ["qwen2.5-1.5b-instruct-q4", "qwen2.5-3b-instruct-q4"],
      notes: ["Running the answer model on CPU (no GPU found): answers take a few seconds."],
      search,
      restartNeeded: search.embedder !== "default",
      embedderFromEnv: false,
      modelsDir: "/home/demo/.local/share/knowhub/models",
      gpuBuilt: false,
      missing: library.filter((m) => m.inUse && m.state !== "ok"),
    },
  };
}

function source(number: number, d: MockDoc, chunkId: number): Source {
  const p = d.passages.find((x) => x.chunkId === chunkId)!;
  const start = Array.from(d.text).join("").indexOf(p.find);
  const line = d.text.slice(start).split("\n")[0];
  return {
    base: "local",
    number,
    evidenceId: `ev-${chunkId}`,
    kind: "doc_chunk",
    title: d.title,
    page: p.page,
    heading: p.heading,
    uri: d.path,
    text: line,
    documentId: d.id,
    chunkId,
    sql: null,
    authors: [],
    date: null,
  };
}

function passageRefs(d: MockDoc) {
  const chars = Array.from(d.text);
  const joined = chars.join("");
  return d.passages.map((p) => {
    const unitStart = joined.indexOf(p.find);
    const unitEnd = joined.indexOf("\n", unitStart) < 0 ? joined.length : joined.indexOf("\n", unitStart);
    // Offsets in code points, as the engine reports them.
    const charStart = Array.from(joined.slice(0, unitStart)).length;
    const charEnd = Array.from(joined.slice(0, unitEnd)).length;
    return { chunkId: p.chunkId, page: p.page, heading: p.heading, charStart, charEnd };
  });
}

async function ask(args: Args): Promise<Answer> {
  const question = String(args.question ?? "").trim();
  const requestId = String(args.requestId);
  const channel = args.onEvent as Channel<ChatEvent>;
  const send = (e: ChatEvent) => channel.onmessage(e);
  if (!question) fail("invalid_input", "type a question first");
  const started = Date.now();
  const check = () => {
    if (cancelled.has(requestId)) {
      cancelled.delete(requestId);
      fail("cancelled", "the question was cancelled");
    }
  };
  const zh = /[\u4e00-\u9fff]/.test(question);
  const denied = /secret|salary|工资/i.test(question);
  const sql = /sales|revenue|销售/i.test(question);
  const nodes = ["Preprocess", "LoadAuthz", "Route", denied ? "Refuse" : sql ? "SqlTool" : "DocTool", "ValidateEvidence", "Synthesize"];
  const steps: TraceView["steps"] = [];
  for (const node of nodes.slice(0, denied ? 4 : nodes.length)) {
    send({ type: "step", node, status: "start", timingMs: 0 });
    const ms = node === "DocTool" ? 500 : node === "Synthesize" ? 50 : 180;
    await sleep(ms);
    check();
    if (node === "Synthesize") break;
    send({ type: "step", node, status: "ok", timingMs: ms });
    steps.push({ node, action: `${node.toLowerCase()} done`, status: "ok", timingMs: ms, error: null });
  }
  const handbookDoc = docs[0];
  const zhDoc = docs[1];
  let sources: Source[] = [];
  let text: string;
  let stopReason = "ok";
  if (denied) {
    stopReason = "permission_denied";
    text = zh ? "抱歉，你无权查看与此问题相关的资料。" : "Sorry, the documents about this are not available to you.";
  } else if (sql) {
    sources = [
      {
        base: "local",
        number: 1,
        evidenceId: "ev-sql-1",
        kind: "sql_result",
        title: "sales",
        page: null,
        heading: [],
        uri: "sql:sales",
        text: "region | total\n-------+--------\nnorth  | 1200000\nsouth  |  980000",
        documentId: null,
        chunkId: null,
        sql: "SELECT region, SUM(amount) AS total\nFROM orders\nWHERE year = 2024\nGROUP BY region\nORDER BY total DESC",
        authors: [],
        date: null,
      },
    ];
    text = zh ? "2024 年北区销售额最高，为 120 万元 [1]。" : "In 2024 the north region sold the most, 1.2 million [1].";
  } else if (zh && canRead(zhDoc)) {
    sources = [source(1, zhDoc, 21), source(2, zhDoc, 22)];
    text = "一线城市住宿标准为每晚 900 元以内，其他城市为每晚 600 元以内 [1]。报销须在出差结束后 30 天内提交，并附原始票据 [2]。";
  } else if (/nothing|没有/i.test(question)) {
    stopReason = "no_evidence";
    text = zh ? "在你有权访问的资料中没有找到相关内容。" : "I found nothing about this in the documents you can read.";
  } else {
    sources = [source(1, handbookDoc, 12), source(2, handbookDoc, 13)];
    text =
      "Business travel must be approved by your manager before booking [1]. Hotel costs are reimbursed up to 900 CNY per night in tier-1 cities and 600 CNY elsewhere [1]. Expense claims are due within 30 days, with the original receipts [2].";
  }
  if (args.brief === true && stopReason === "ok" && sources.length > 0) {
    // The brief form: the words of the first source that answer, cited.
    text = sql ? (zh ? "north，1200000 [1]" : "north, 1200000 [1]") : zh ? "每晚 900 元以内 [1]" : "up to 900 CNY per night [1]";
  }
  // Stream a draft (with a sentence the citation check will cut when asked to).
  const draft = /replace/i.test(question) ? `${text} Also, everyone gets a free car.` : text;
  for (const piece of draft.match(/\S+\s*|\s+/g) ?? []) {
    await sleep(35);
    check();
    send({ type: "token", text: piece });
  }
  if (draft !== text) {
    await sleep(200);
    send({ type: "replace", text });
  }
  send({ type: "step", node: "Synthesize", status: "ok", timingMs: 700 });
  steps.push({ node: "Synthesize", action: "llm: 220 prompt tokens", status: "ok", timingMs: 700, error: null });
  let sessionId = (args.sessionId as string | null) ?? null;
  if (!sessionId) {
    sessionId = `s-${Math.random().toString(36).slice(2, 10)}`;
    conversations.set(sessionId, { id: sessionId, owner: me.id, title: question.slice(0, 40), updatedAtMs: Date.now(), answers: [] });
  }
  const traceId = `t-${Math.random().toString(36).slice(2, 12)}`;
  const base = args.base === "team" ? "team" : "local";
  sources = sources.map((s) => ({ ...s, base }));
  const answer: Answer = {
    base,
    sessionId,
    traceId,
    question,
    text,
    stopReason,
    route: denied ? "refuse" : sql ? "sql" : "doc",
    sources,
    totalMs: Date.now() - started,
    writtenBy: "llm",
    model: "qwen2.5-1.5b-instruct-q4",
    helpful: null,
    notice: null,
  };
  const conv = conversations.get(sessionId);
  if (conv) {
    conv.answers.push(answer);
    conv.updatedAtMs = Date.now();
  }
  traces.set(traceId, {
    traceId,
    question,
    standaloneQuestion: conv && conv.answers.length > 1 ? `${question} (about travel expenses)` : question,
    conversationSummary: conv && conv.answers.length > 6 ? "Earlier questions: travel expenses | hotel limits" : null,
    language: zh ? "zh" : "en",
    route: answer.route,
    routedBy: "rules",
    stopReason,
    permSnapshotId: "perm-7f3a9c2e1b",
    totalMs: answer.totalMs,
    steps,
    evidence: [
      ...sources.map((s) => ({
        evidenceId: s.evidenceId,
        kind: s.kind,
        title: s.title,
        page: s.page,
        authz: "allow",
        score: 0.82,
        cited: true,
        excerpt: s.text.slice(0, 280),
      })),
      { evidenceId: "ev-99", kind: "doc_chunk", title: "Board minutes", page: 4, authz: "filtered", score: 0.61, cited: false, excerpt: "" },
    ],
    sql: sql
      ? { source: "sales", sql: sources[0].sql ?? "", generatedBy: "llm", preview: sources[0].text }
      : null,
    ragQueries: sql || denied ? [] : [question, "travel reimbursement hotel limit"],
    cutSentences: draft !== text ? ["Also, everyone gets a free car."] : [],
    model: "qwen2.5-1.5b-instruct-q4",
    promptTokens: 1234,
    completionTokens: 87,
    toolErrors: [],
  });
  return answer;
}

function folderTree(): FolderNode[] {
  const rels = ["", "Engineering", "HR", "HR/policies"];
  return rels.map((rel) => {
    let from: string | null = null;
    for (let r: string | null = rel; r !== null; r = r === "" ? null : r.includes("/") ? r.slice(0, r.lastIndexOf("/")) : "") {
      if (acl.has(r)) {
        from = r;
        break;
      }
    }
    const explicit = acl.get(rel) ?? null;
    return {
      path: rel ? `${ROOT}/${rel}` : ROOT,
      relative: rel,
      depth: rel ? rel.split("/").length : 0,
      documents: docs.filter((d) => d.path.startsWith(rel ? `${ROOT}/${rel}/` : `${ROOT}/`)).length,
      explicit,
      effective: from !== null ? acl.get(from)! : "(none: each document's owner and administrators only)",
      inheritedFrom: explicit != null ? null : from,
    };
  });
}

function ingestEvent(e: IngestEvent) {
  void emit("ingest-event", e);
}

async function ingestDropped(args: Args): Promise<DroppedFile[]> {
  const paths = (args.paths as string[]) ?? [];
  if (!paths.length) fail("invalid_input", "nothing was dropped");
  const out: DroppedFile[] = [];
  for (const [i, p] of paths.entries()) {
    await sleep(400);
    const name = p.split("/").pop() ?? p;
    const stored = `/home/demo/.local/share/knowhub/uploads/${me.id}/${name}`;
    const bad = /\.(exe|zip)$/i.test(name);
    const outcome = bad ? "unsupported" : "added";
    const reason = bad ? "not a document type KnowHub reads" : null;
    ingestEvent({ type: "progress", queued: paths.length - i - 1, running: 1, failed: 0, done: i, paused, current: stored, pagesRead: null, pages: null, etaSecs: 2 });
    ingestEvent({ type: "file", path: stored, outcome, reason });
    out.push({ source: p, storedAs: stored, outcome, reason });
    if (!bad) {
      docs.push({
        id: docs.length + 1,
        title: name,
        path: stored,
        kind: name.split(".").pop() ?? null,
        status: "indexed",
        error: null,
        chunks: 3,
        updatedAtMs: Date.now(),
        owner: me.id,
        text: `The contents of ${name}.`,
        passages: [],
        scopes: "",
      });
    }
  }
  ingestEvent({ type: "idle" });
  return out;
}

/** The joined team server of the mock (join with the key `kh_team`). */
let team: { server: string } | null = null;
let teamAnswers: "server" | "this_computer" = "server";

function teamView() {
  return {
    joined: team !== null,
    server: team?.server ?? null,
    state: team ? "ok" : "not_joined",
    message: null,
    user: team ? me.id : null,
    displayName: team ? me.displayName : null,
    role: team ? "USER" : null,
    account: team ? "default" : null,
    keyStore: team ? "keyring" : null,
    answers: teamAnswers,
  };
}

async function handle(cmd: string, args: Args): Promise<unknown> {
  await sleep(60);
  switch (cmd) {
    case "app_info":
      return appInfo();
    case "sign_in": {
      const u = users.find((x) => x.key === String(args.apiKey).trim());
      if (!u) fail("unauthenticated", "this API key is not valid (it may have been revoked)");
      me = u;
      return appInfo();
    }
    case "ask":
      return ask(args);
    case "cancel_ask":
      cancelled.add(String(args.requestId));
      return true;
    case "conversations":
      return [...conversations.values()]
        .filter((c) => c.owner === me.id)
        .sort((a, b) => b.updatedAtMs - a.updatedAtMs)
        .map(({ id, title, updatedAtMs }) => ({ id, title, updatedAtMs }));
    case "conversation": {
      const c = conversations.get(String(args.id));
      if (!c || c.owner !== me.id) fail("not_found", `no conversation ${String(args.id)}`);
      return c.answers;
    }
    case "delete_conversation":
      conversations.delete(String(args.id));
      return null;
    case "trace": {
      const tr = traces.get(String(args.traceId));
      if (!tr) fail("not_found", "no such trace");
      return tr;
    }
    case "send_feedback":
      return null;
    case "open_document": {
      const d = docs.find((x) => x.id === args.documentId);
      if (!d || !canRead(d)) fail("not_found", `no document ${String(args.documentId)}`);
      return { id: d.id, title: d.title, path: d.path, kind: d.kind, pageCount: 3, text: d.text, passages: passageRefs(d) };
    }
    case "open_in_default_app":
      return null;
    case "sources": {
      const words = String(args.filter ?? "").toLowerCase().split(/\s+/).filter(Boolean);
      const visible = docs.filter(canRead);
      const documents = visible
        .filter((d) => words.every((w) => `${d.title} ${d.path}`.toLowerCase().includes(w)))
        .map(({ text: _t, passages: _p, scopes: _s, ...row }) => row);
      return {
        folders: [
          { path: ROOT, documents: visible.length, watched: watched.includes(ROOT) },
          { path: `${ROOT}/HR`, documents: visible.filter((d) => d.path.includes("/HR/")).length, watched: false },
        ],
        documents,
        total: documents.length,
        queue: {
          queued: 1,
          running: 0,
          failed: 1,
          done: 3,
          paused,
          failures: [{ path: `${ROOT}/Engineering/scan-2019.pdf`, error: "the PDF has no text layer" }],
        },
      };
    }
    case "ingest_dropped":
      return ingestDropped(args);
    case "watch_folder":
      watched = [...watched, String(args.path)];
      return null;
    case "unwatch_folder":
      watched = watched.filter((w) => w !== args.path);
      return null;
    case "web_sources":
      if (!isAdmin()) fail("forbidden", "only an administrator can see web sources");
      return webSources;
    case "add_web_source": {
      const url = String(args.url).trim();
      if (!/^https?:\/\/[^/]+/.test(url)) fail("invalid", `"${url}" is not an http or https address`);
      if (webSources.some((w) => w.url === url)) fail("conflict", `${url} is crawled already`);
      const row: WebSourceRow = {
        id: webSources.length + 1,
        url,
        folder: `/home/demo/.local/share/knowhub/web/site-${webSources.length + 1}`,
        depth: Number(args.depth),
        everyHours: (args.everyHours as number | null) ?? null,
        documents: 0,
        lastRun: null,
      };
      webSources.push(row);
      return row;
    }
    case "run_web_source": {
      const row = webSources.find((w) => w.id === args.id);
      if (!row) fail("not_found", `no web source ${String(args.id)}`);
      await sleep(600);
      row.documents = 12;
      row.lastRun = { finishedAtMs: Date.now(), pages: 12, fetched: 12, unchanged: 0, removed: 0, failed: 0, skipped: 1, aborted: null, stopped: null, problems: [`${row.url}private/: robots.txt disallows it`] };
      return row;
    }
    case "remove_web_source": {
      const i = webSources.findIndex((w) => w.id === args.id);
      if (i < 0) fail("not_found", `no web source ${String(args.id)}`);
      const [gone] = webSources.splice(i, 1);
      return gone.documents;
    }
    case "set_ingestion_paused":
      paused = Boolean(args.paused);
      ingestEvent({ type: "progress", queued: 1, running: 0, failed: 1, done: 3, paused, current: null, pagesRead: null, pages: null, etaSecs: null });
      return null;
    case "retry_failed":
      return 1;
    case "folder_tree":
      if (!isAdmin()) fail("forbidden", "only administrators edit folder permissions");
      return folderTree();
    case "set_folder_acl": {
      const rel = String(args.path).slice(ROOT.length).replace(/^\//, "");
      const scopes = (args.scopes as string[]).filter(Boolean);
      if (scopes.some((s) => !/^(public|(team|project|org|user):[\w.-]+)$/.test(s))) {
        fail("invalid_input", `bad scopes: ${scopes.join(" ")}`);
      }
      if (scopes.length) acl.set(rel, scopes.join(" "));
      else acl.delete(rel);
      return null;
    }
    case "folder_readers": {
      const node = folderTree().find((n) => n.path === args.path);
      if (!node) fail("not_found", `${String(args.path)} is not an ingested folder you can see`);
      const scopes = node.effective.startsWith("(none") ? [] : node.effective.split(" ");
      return {
        folder: node.path,
        documents: node.documents,
        readers: users.map((u) => ({
          user: u.id,
          displayName: u.displayName,
          role: u.role,
          readable:
            u.role !== "USER" || scopes.includes("public") || scopes.some((s) => u.groups.includes(s) || s === `user:${u.id}`)
              ? node.documents
              : 0,
        })),
      };
    }
    case "users":
      return users.map(({ key: _k, ...u }) => u);
    case "add_user": {
      const id = String(args.id).trim();
      if (!/^[a-z0-9._-]+$/i.test(id)) fail("invalid_input", `bad user id ${id}`);
      if (users.some((u) => u.id === id)) fail("invalid_input", `user ${id} exists (or existed: ids are never reused)`);
      const key = `kh_${Math.random().toString(36).slice(2, 18)}`;
      users.push({ id, displayName: String(args.displayName) || id, role: String(args.role), groups: [], key });
      return { user: id, apiKey: key };
    }
    case "remove_user": {
      const i = users.findIndex((u) => u.id === args.id);
      if (i < 0) fail("not_found", `no active user ${String(args.id)}`);
      users.splice(i, 1);
      return null;
    }
    case "set_role": {
      const u = users.find((x) => x.id === args.id);
      if (!u) fail("not_found", `no active user ${String(args.id)}`);
      u.role = String(args.role).toUpperCase();
      return null;
    }
    case "set_membership": {
      const u = users.find((x) => x.id === args.id);
      const g = String(args.group).trim();
      if (!u) fail("not_found", `no active user ${String(args.id)}`);
      if (!/^(team|project|org):[\w.-]+$/.test(g)) fail("invalid_input", `not a group: ${g} (team:x, project:x or org:x)`);
      u.groups = args.join ? [...new Set([...u.groups, g])] : u.groups.filter((x) => x !== g);
      return null;
    }
    case "rotate_key": {
      const u = users.find((x) => x.id === args.id);
      if (!u) fail("not_found", `no active user ${String(args.id)}`);
      u.key = `kh_${Math.random().toString(36).slice(2, 18)}`;
      return { user: u.id, apiKey: u.key };
    }
    case "revoke_keys":
      return 1;
    case "drop_targets":
      return [
        { base: "local", kind: "uploads", name: "", path: "/home/demo/.local/share/knowhub/uploads/demo" },
        { base: "local", kind: "watched", name: "Company", path: ROOT },
      ];
    case "model_library":
      return library;
    case "download_model": {
      const row = library.find((m) => m.name === args.name);
      if (!row) fail("not_found", `no model ${String(args.name)}`);
      const channel = args.onEvent as Channel<unknown>;
      for (let done = 0; done <= 4; done++) channel.onmessage({ type: "download", done, total: 4 });
      channel.onmessage({ type: "installed" });
      row.state = "ok";
      return row;
    }
    case "set_search_models":
      search = { ...(args.setting as SearchModelsSetting), reranker: (args.setting as SearchModelsSetting).reranker ?? null };
      return appInfo();
    case "restart_app":
      return null;
    case "set_llm": {
      const s = args.setting as LlmSetting;
      // The key is write-only: the window only learns that one is saved.
      llm = s.kind === "open_ai" ? { ...s, apiKey: null, hasKey: s.hasKey || !!s.apiKey } : s;
      return appInfo();
    }
    case "data_sources":
      return {
        sources: dataSources,
        tables: [{ sqlName: "sheet_budget_2024", rows: 214, documentPath: `${ROOT}/Finance/budget.xlsx` }],
      };
    case "add_data_source":
      dataSources.push({
        name: String(args.name),
        path: String(args.path),
        scopes: args.scopes as string[],
        tenantColumn: (args.tenantColumn as string | null) ?? null,
      });
      return null;
    case "remove_data_source": {
      const i = dataSources.findIndex((d) => d.name === args.name);
      if (i >= 0) dataSources.splice(i, 1);
      return null;
    }
    case "api_server_status":
      return apiServerView();
    case "set_api_server": {
      if (!["ROOT", "ADMIN"].includes(me.role)) fail("forbidden", "only administrators switch the HTTP API on or off");
      const port = Number(args.port);
      if (port < 1024) fail("invalid_input", `port ${port} is not allowed: choose a port between 1024 and 65535`);
      apiServer = { enabled: Boolean(args.enabled), port };
      return apiServerView();
    }
    case "team_status":
      return teamView();
    case "set_team_answers":
      if (!team) fail("not_joined", "this app has not joined a team server");
      teamAnswers = args.answers === "this_computer" ? "this_computer" : "server";
      return teamView();
    case "join_team": {
      const server = String(args.server).trim();
      if (!/^https:\/\/|^http:\/\/(127\.0\.0\.1|localhost)/.test(server))
        fail("invalid_input", `${server}: use https:// (http:// only for this computer)`);
      if (String(args.apiKey).trim() !== "kh_team") fail("unauthenticated", "the API key is not valid (UNAUTHENTICATED, HTTP 401)");
      team = { server };
      welcomed = true;
      return teamView();
    }
    case "finish_first_run":
      welcomed = true;
      return null;
    case "leave_team":
      team = null;
      return null;
    case "plugin:dialog|open":
      return "/home/demo/Projects";
    default:
      fail("internal", `the mock has no command ${cmd}`);
  }
}

export function installMock(): void {
  mockWindows("main");
  mockIPC((cmd, args) => handle(cmd, (args ?? {}) as Args), { shouldMockEvents: true });
  // Background ingestion ticking along, so the status pill has something to show.
  let left = 3;
  const tick = () => {
    if (left < 0) return;
    if (left === 0) ingestEvent({ type: "idle" });
    else
      ingestEvent({
        type: "progress",
        queued: left - 1,
        running: 1,
        failed: 1,
        done: 3 - left,
        paused,
        current: `${ROOT}/Engineering/apollo.md`,
        pagesRead: null,
        pages: null,
        etaSecs: left * 20,
      });
    left -= 1;
    setTimeout(tick, 1500);
  };
  setTimeout(tick, 800);
  console.info("KnowHub: mock back end (keys: kh_root, kh_alice, kh_bob)");
}
