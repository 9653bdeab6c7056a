// The question page: asks POST /answer and shows the answer marked in its passage, the other
// passages and the cost. No build step; every text from the server goes in as text, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
let canAsk = true; // false when the server has no corpus index

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

// The server's span counts code points (Python); JavaScript strings count UTF-16 units.
function marked(passage, span) {
  const chars = Array.from(passage);
  const [start, end] = span;
  const out = document.createDocumentFragment();
  out.append(chars.slice(0, start).join(""), el("mark", chars.slice(start, end).join("")),
    chars.slice(end).join(""));
  return out;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = false;
}

async function loadHealth() {
  try {
    const health = await (await fetch("/health")).json();
    const where = health.index ? `answering over ${health.index} with ${health.method}` :
      "no corpus index loaded: start the server with --index DIR to ask questions";
    $("loaded").textContent = `${health.model} (${health.kind}), ${where}`;
    canAsk = Boolean(health.index);
    $("submit").disabled = !canAsk;
  } catch (err) {
    $("loaded").textContent = "the server does not answer";
  }
}

function showAnswer(body, millis) {
  const best = body.answers[0];
  const guess = best && !body.answered;
  $("answer-text").textContent = !best ? "No answer: nothing in the index matches." :
    guess ? `No answer found in your documents. Best guess: ${best.answer}` : best.answer;
  $("answer-text").classList.toggle("quiet", Boolean(guess));
  $("answer-confidence").textContent = body.confidence === null || body.confidence === undefined ?
    "" : `confidence ${body.confidence.toFixed(2)}`;
  $("answer-title").textContent = best ? best.title || best.document : "";
  const where = best ? [best.title ? best.document : "", best.location].filter(Boolean).join(", ") : "";
  $("answer-doc").textContent = where ? `(${where})` : "";
  $("answer-passage").replaceChildren(best ? marked(best.passage, best.answer_span) : "");
  $("answer-passage").hidden = !best;
  const c = body.cost;
  $("cost").textContent = `${body.method}: ${c.inferences} inferences, ` +
    `${c.layer_units.toLocaleString()} layer-units, ${Math.round(c.compute_seconds * 1000)} ms ` +
    `compute, ${Math.round(millis)} ms in all`;
  const others = body.passages.filter((p) => !best || p.passage_id !== best.passage_id);
  $("passages").replaceChildren(...others.map((p) => {
    const item = el("li");
    const score = p.score === null ? "" : ` · score ${p.score.toFixed(3)}`;
    item.append(el("span", `${p.title || p.document}${score}`, "meta quiet"), el("span", p.text));
    return item;
  }));
  $("others").hidden = others.length === 0;
  $("result").hidden = false;
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  $("error").hidden = true;
  $("submit").disabled = true;
  const started = performance.now();
  try {
    const response = await fetch("/answer", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question, passages: 6 }),
    });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
    showAnswer(body, performance.now() - started);
  } catch (err) {
    $("result").hidden = true;
    showError(err.message);
  } finally {
    $("submit").disabled = !canAsk;
  }
}

$("ask").addEventListener("submit", ask);
loadHealth();
