#!/usr/bin/env node
// Fails (exit 1) when:
//  - en.json and zh-CN.json do not have the same keys (plural forms `_one`/`_other`… count as
//    one key, since Chinese has only `_other`), or a key's {{placeholders}} differ;
//  - a .tsx file has user-visible text that is not a translation: JSX text with letters, a
//    string literal rendered as a JSX child, or a literal title/placeholder/aria-label/alt/label;
//  - a `t("literal.key")` call names a key en.json does not have (template keys such as
//    t(`errors.${kind}`) must at least name an existing group).
// Parses with the TypeScript compiler already in devDependencies, so comments and strings are
// understood, not pattern-matched.

import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src");
const LOCALES = ["en", "zh-CN"];
const PLURAL = /_(zero|one|two|few|many|other)$/;
const TEXT_ATTRS = new Set(["title", "placeholder", "aria-label", "alt", "label", "aria-description"]);
const LETTERS = /\p{L}/u;

const errors = [];

function flatten(obj, prefix = "", out = new Map()) {
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === "object") flatten(v, key, out);
    else out.set(key, String(v));
  }
  return out;
}

function placeholders(text) {
  return [...text.matchAll(/\{\{\s*([\w.]+)\s*(?:,[^}]*)?\}\}/g)].map((m) => m[1]).sort().join(",");
}

// ----- 1. the two languages have the same keys ------------------------------------------
const flat = {};
const groups = {};
for (const lang of LOCALES) {
  const file = join(src, "locales", `${lang}.json`);
  const data = JSON.parse(readFileSync(file, "utf8"));
  flat[lang] = flatten(data);
  // key without plural suffix -> placeholders of each form
  const g = new Map();
  for (const [k, v] of flat[lang]) {
    const base = k.replace(PLURAL, "");
    if (!g.has(base)) g.set(base, new Set());
    g.get(base).add(placeholders(v));
    if (v.trim() === "") errors.push(`${lang}.json: ${k} is empty`);
  }
  groups[lang] = g;
}
const [a, b] = LOCALES;
for (const [x, y] of [
  [a, b],
  [b, a],
]) {
  for (const key of groups[x].keys()) {
    if (!groups[y].has(key)) errors.push(`${y}.json is missing "${key}" (present in ${x}.json)`);
  }
}
for (const [key, ph] of groups[a]) {
  const other = groups[b].get(key);
  if (!other) continue;
  const pa = [...ph].sort().join(" | ");
  const pb = [...other].sort().join(" | ");
  // Plural forms may drop {{count}} in one form ("One file"), so compare the union.
  const ua = new Set([...ph].flatMap((s) => s.split(",")).filter(Boolean));
  const ub = new Set([...other].flatMap((s) => s.split(",")).filter(Boolean));
  const same = ua.size === ub.size && [...ua].every((v) => ub.has(v));
  if (!same) errors.push(`"${key}" has placeholders {${pa}} in ${a}.json but {${pb}} in ${b}.json`);
}

// Keys that exist (plural-normalised) and groups (prefixes) that exist, for the t() check.
const known = new Set(groups[a].keys());
const prefixes = new Set();
for (const k of flat[a].keys()) {
  const parts = k.split(".");
  for (let i = 1; i < parts.length; i++) prefixes.add(parts.slice(0, i).join("."));
}

// ----- 2. no untranslated text in .tsx, and t() keys exist --------------------------------
function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (/\.tsx?$/.test(name) && !name.endsWith(".d.ts") && name !== "bindings.ts") out.push(p);
  }
  return out;
}

const files = walk(src);
let tsxCount = 0;
let tCalls = 0;
for (const file of files) {
  const text = readFileSync(file, "utf8");
  const isTsx = file.endsWith(".tsx");
  if (isTsx) tsxCount++;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, isTsx ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const where = (node) => {
    const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
    return `${relative(root, file)}:${line + 1}:${character + 1}`;
  };

  const visit = (node) => {
    if (isTsx && ts.isJsxText(node)) {
      const s = node.getText(sf).trim();
      if (s && LETTERS.test(s)) errors.push(`${where(node)}: JSX text is not translated: "${s.slice(0, 60)}"`);
    }
    if (isTsx && ts.isJsxExpression(node) && node.expression && node.parent && (ts.isJsxElement(node.parent) || ts.isJsxFragment(node.parent))) {
      const e = node.expression;
      if ((ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) && LETTERS.test(e.text)) {
        errors.push(`${where(node)}: string rendered in JSX is not translated: "${e.text.slice(0, 60)}"`);
      }
    }
    if (isTsx && ts.isJsxAttribute(node) && node.initializer) {
      const name = node.name.getText(sf);
      let lit = null;
      if (ts.isStringLiteral(node.initializer)) lit = node.initializer;
      else if (
        ts.isJsxExpression(node.initializer) &&
        node.initializer.expression &&
        (ts.isStringLiteral(node.initializer.expression) || ts.isNoSubstitutionTemplateLiteral(node.initializer.expression))
      ) {
        lit = node.initializer.expression;
      }
      if (lit && TEXT_ATTRS.has(name) && LETTERS.test(lit.text)) {
        errors.push(`${where(node)}: ${name}="${lit.text.slice(0, 60)}" is not translated`);
      }
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const isT = ts.isIdentifier(callee) ? callee.text === "t" : ts.isPropertyAccessExpression(callee) && callee.name.text === "t";
      const arg = node.arguments[0];
      if (isT && arg) {
        tCalls++;
        if (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg)) {
          if (!known.has(arg.text) && !prefixes.has(arg.text)) {
            errors.push(`${where(node)}: t("${arg.text}") names no key in en.json`);
          }
        } else if (ts.isTemplateExpression(arg)) {
          const head = arg.head.text.replace(/\.$/, "");
          if (head && !prefixes.has(head)) errors.push(`${where(node)}: t(\`${arg.head.text}…\`) names no group in en.json`);
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

if (errors.length) {
  for (const e of errors) console.error(`✗ ${e}`);
  console.error(`\ni18n check failed: ${errors.length} problem(s).`);
  process.exit(1);
}
console.log(
  `i18n check passed: ${known.size} keys in ${LOCALES.join(" and ")}, ${tsxCount} .tsx files with no untranslated text, ${tCalls} t() calls with known keys.`,
);
