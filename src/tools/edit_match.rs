//! Where `file_edit` puts `new_text`: the place `old_text` names, found the way small
//! models write it. Each rule below mends a way small models get `old_text` wrong.
//!
//! In order; the first rule that finds exactly one place wins, and two places are
//! ambiguous and stop the search:
//! 1. `old_text` exactly as written, then with the file's CRLF line breaks;
//! 2. with its escapes decoded, when the model escaped twice (`\n`, `\"` as two characters);
//! 3. loosely: lines trimmed and `'` read as `"` (a one-line `old_text` may be part of a
//!    line), `new_text` then taking the file's indentation;
//! 4. approximately: the one run of lines at least 90% alike, character by character,
//!    once lines are trimmed (a docstring copied with a typo, a line left out).
//!
//! An `old_text` the same as `new_text` changes nothing where the file has it (the file
//! is left as it is, which is not an error). Where it does not, in Python, the model
//! wrote the version it wants in both: each definition it holds replaces the file's
//! definition of that name, as with an empty `old_text`.
//!
//! With no place found, a `new_text` the file already has was made before (a model
//! repeating an edit that worked): the file is left as it is. Else a `new_text` that is
//! the whole file (it keeps most of the file's words in order, and at least half of its
//! functions and classes) replaces the file. An
//! empty `old_text` appends `new_text` (in Python before a closing
//! `if __name__ == "__main__":` block, so the script still runs it last), except that
//! Python definitions the file already has are replaced. Otherwise the miss carries the
//! text to copy from: the whole file when it is small, else the lines closest to
//! `old_text`.

use similar::TextDiff;

use crate::checks::defines::{Language, defined_name, names_defined};

/// Least character similarity (0..1) for an approximate match.
const APPROXIMATE_AT_LEAST: f32 = 0.9;
/// An approximate match needs this many non-blank characters in `old_text`: below it, a
/// few characters' difference is a different line.
const APPROXIMATE_MIN_CHARS: usize = 20;
/// Files longer than this are not searched approximately (cost grows with lines × length).
const APPROXIMATE_MAX_FILE_LINES: usize = 2000;
const APPROXIMATE_MAX_OLD_LINES: usize = 60;
/// A file this small is shown whole when `old_text` is not found.
const SHOW_WHOLE_FILE_LINES: usize = 60;
const SHOW_WHOLE_FILE_BYTES: usize = 3000;
/// How much of the file, in tenths of its words, a whole new file keeps in order: a fix
/// of a small file changes a good part of it (`return x + 1` → `return 2 * x` is two of
/// nine words).
const WHOLE_FILE_KEPT_TENTHS: usize = 6;
/// A file of fewer words is never taken as replaced whole: too little to tell.
const WHOLE_FILE_MIN_WORDS: usize = 4;
/// Lines of context around the closest lines shown for a larger file.
const NEAREST_CONTEXT_LINES: usize = 3;

/// The edited file and what the edit did, in words for the model.
#[derive(Debug, PartialEq)]
pub(super) struct Applied {
    pub edited: String,
    pub detail: String,
}

#[derive(Debug, PartialEq)]
pub(super) enum Miss {
    /// Nowhere: `nearest` is the text to copy `old_text` from.
    NotFound {
        nearest: String,
    },
    Ambiguous {
        count: usize,
    },
    /// `old_text` and `new_text` are the same text, which the file does not have.
    SameTexts,
}

/// The repairs of an edit (`checks::REPAIRS`): rules 2, 3 and 4, and a `new_text` taken
/// as the whole file. Rule 1 and an append are the edit as written.
pub const REPAIR_EDIT_ESCAPES: &str = "repair.edit-escapes";
pub const REPAIR_EDIT_LOOSE: &str = "repair.edit-loose-match";
pub const REPAIR_EDIT_APPROXIMATE: &str = "repair.edit-approximate-match";
pub const REPAIR_EDIT_WHOLE_FILE: &str = "repair.edit-whole-file";
pub const REPAIR_EDIT_SAME_TEXTS: &str = "repair.edit-same-texts";
pub const REPAIR_EDIT_ALREADY_MADE: &str = "repair.edit-already-made";
/// A `new_text` shorter than this (non-blank characters) is not taken as an edit made
/// before: a short text may be in the file for other reasons.
const ALREADY_MADE_MIN_CHARS: usize = 20;

/// `file_name` is the path shown to the model; a `.py` name makes an append go before
/// the script's main block.
#[cfg(test)]
pub(super) fn apply(text: &str, old: &str, new: &str, file_name: &str) -> Result<Applied, Miss> {
    apply_with(text, old, new, file_name, &|_| true).map(|(applied, _)| applied)
}

/// As [`apply`], with only the repairs `on` says are on, and the repair the edit took,
/// if it took one.
pub(super) fn apply_with(
    text: &str,
    old: &str,
    new: &str,
    file_name: &str,
    on: &dyn Fn(&str) -> bool,
) -> Result<(Applied, Option<&'static str>), Miss> {
    let whole_file = || Applied {
        edited: new.to_string(),
        detail: format!(
            "old_text was {}, but new_text is the whole file (it keeps most of {file_name}'s words in order), so {file_name} now holds new_text",
            if old.is_empty() { "empty" } else { "not found" }
        ),
    };
    if old == new {
        return same_texts(text, new, file_name, on);
    }
    let whole_file_on = on(REPAIR_EDIT_WHOLE_FILE);
    let taken_whole = || is_whole_file(text, new) && keeps_definitions(text, new, file_name);
    if old.is_empty() {
        // The whole file as new_text means "this is the file", not "add a second copy".
        if whole_file_on && taken_whole() {
            return Ok((whole_file(), Some(REPAIR_EDIT_WHOLE_FILE)));
        }
        let python = file_name.ends_with(".py");
        if python && let Some(applied) = redefine(text, new, file_name, "old_text was empty") {
            return Ok((applied, None));
        }
        return Ok((append(text, new, python), None));
    }
    if let Some(found) = find_place(text, old, new, on)? {
        return Ok(found);
    }
    if on(REPAIR_EDIT_ALREADY_MADE) && already_made(text, new) {
        let detail = format!(
            "old_text is not in {file_name}, and new_text already is: this edit was made \
before. Edit what is still to change, or reply without a tool call when the work is done"
        );
        return Ok((
            Applied {
                edited: text.to_string(),
                detail,
            },
            Some(REPAIR_EDIT_ALREADY_MADE),
        ));
    }
    if whole_file_on && taken_whole() {
        return Ok((whole_file(), Some(REPAIR_EDIT_WHOLE_FILE)));
    }
    Err(Miss::NotFound {
        nearest: nearest(text, old, file_name),
    })
}

/// An edit whose `old_text` and `new_text` are the same. Where the file has the text,
/// the file stays as it is, and the model is told so; an error would send it retrying a
/// call that did what it asks. Where it does not, and the text is Python definitions of
/// names the file defines, the model wrote the version it wants in both fields (it
/// cannot have meant to replace text with itself): those definitions are replaced. A first line
/// written without its `def` (`name(args):`, copied from after the file's `def `) gets
/// the file's.
fn same_texts(
    text: &str,
    new: &str,
    file_name: &str,
    on: &dyn Fn(&str) -> bool,
) -> Result<(Applied, Option<&'static str>), Miss> {
    if !new.trim().is_empty() && text.contains(new.trim()) {
        let detail = format!(
            "old_text and new_text are the same, and {file_name} already has that text. If a \
change is still to make, give new_text as the text should be after it"
        );
        return Ok((
            Applied {
                edited: text.to_string(),
                detail,
            },
            None,
        ));
    }
    if !on(REPAIR_EDIT_SAME_TEXTS) || !file_name.ends_with(".py") {
        return Err(Miss::SameTexts);
    }
    let with_header = with_files_def(text, new);
    let new = with_header.as_deref().unwrap_or(new);
    let why = "old_text and new_text were the same, and the file does not have that text";
    redefine(text, new, file_name, why)
        .map(|applied| (applied, Some(REPAIR_EDIT_SAME_TEXTS)))
        .ok_or(Miss::SameTexts)
}

/// Whether the file has `new` (exactly, or line by line ignoring indentation and quote
/// style) where no place for `old` was found: the edit was made before. A short `new` is
/// never taken so.
fn already_made(text: &str, new: &str) -> bool {
    let new = new.trim();
    new.chars().filter(|c| !c.is_whitespace()).count() >= ALREADY_MADE_MIN_CHARS
        && (text.contains(new)
            || text.contains(&new.replace('\n', "\r\n"))
            || !loose_matches(text, new).is_empty())
}

/// `new` with the `def ` (or `async def `) of the file's definition of the name its
/// first line starts with, when that line is a header written without it.
fn with_files_def(text: &str, new: &str) -> Option<String> {
    let body = new.trim_start_matches(['\n', '\r']);
    let first = body.lines().next()?;
    let name: String = first
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let header = first.trim_end();
    if name.is_empty() || !first[name.len()..].starts_with('(') || !header.ends_with(':') {
        return None;
    }
    let keyword = text.lines().find_map(|line| {
        let keyword = &line[..line.find(&format!("{name}("))?];
        (defined_name(line, Language::Python).as_deref() == Some(name.as_str())
            && !keyword.starts_with([' ', '\t']))
        .then_some(keyword)
    })?;
    Some(format!("{keyword}{body}"))
}

/// Rules 1 to 4: the one place `old` names, if there is one, and the repair that found it.
fn find_place(
    text: &str,
    old: &str,
    new: &str,
    on: &dyn Fn(&str) -> bool,
) -> Result<Option<(Applied, Option<&'static str>)>, Miss> {
    let mut variants = variants(text, old, new);
    // The first readings are the edit as written; a later one decodes its escapes.
    if !on(REPAIR_EDIT_ESCAPES) {
        variants.retain(|(_, _, how)| how.is_empty());
    }
    for (old, new, how) in &variants {
        let repair = (!how.is_empty()).then_some(REPAIR_EDIT_ESCAPES);
        match text.matches(old.as_str()).count() {
            0 => {}
            1 => {
                let detail = format!(
                    "replaced {} line(s) with {}{how}",
                    old.lines().count().max(1),
                    new.lines().count()
                );
                return Ok(Some((
                    Applied {
                        edited: text.replacen(old.as_str(), new, 1),
                        detail,
                    },
                    repair,
                )));
            }
            count => return Err(Miss::Ambiguous { count }),
        }
    }
    if on(REPAIR_EDIT_LOOSE) {
        for (old, new, how) in &variants {
            match loose_matches(text, old).as_slice() {
                [] => {}
                [found] => {
                    let how = format!("old_text matched ignoring indentation and quote style{how}");
                    return Ok(Some((
                        found.apply(text, new, &how),
                        Some(REPAIR_EDIT_LOOSE),
                    )));
                }
                many => return Err(Miss::Ambiguous { count: many.len() }),
            }
        }
    }
    if !on(REPAIR_EDIT_APPROXIMATE) {
        return Ok(None);
    }
    // The last reading is the likeliest: escapes decoded, the file's line breaks.
    let (old, new, how) = variants.last().expect("variants holds old_text as given");
    Ok(approximate_match(text, old).map(|(found, alike)| {
        let how = format!(
            "old_text matched approximately ({:.0}% alike){how}; check the result",
            alike * 100.0
        );
        (found.apply(text, new, &how), Some(REPAIR_EDIT_APPROXIMATE))
    }))
}

/// (old, new, how they were read): in the file's line breaks (CRLF or not), as given,
/// then with escapes decoded.
fn variants(text: &str, old: &str, new: &str) -> Vec<(String, String, &'static str)> {
    let crlf = text.contains("\r\n");
    let with_breaks = |s: &str| {
        if crlf && !s.contains("\r\n") {
            s.replace('\n', "\r\n")
        } else {
            s.to_string()
        }
    };
    let mut out = vec![(with_breaks(old), with_breaks(new), "")];
    if with_breaks(old) != old {
        out.push((old.to_string(), new.to_string(), ""));
    }
    let decoded = unescape(old);
    if decoded != old {
        out.push((
            with_breaks(&decoded),
            with_breaks(&unescape(new)),
            " (its escapes, written twice, were decoded)",
        ));
    }
    out
}

/// Python code the model escaped twice, decoded. Either one line with no real line
/// break whose `\n`s start indented lines or definitions (`def f(text):\n    return 1`
/// written as one line), or code with real line breaks and a `\n` written as two
/// characters outside any string, where it can only be a syntax error (a docstring line
/// run on into the next with `"\n    return …`). Either way the file cannot run, and a
/// model that wrote it so tends to write it so again on every fix round.
/// `None` when the text is not that.
pub(crate) fn twice_escaped_python(path: &str, text: &str) -> Option<String> {
    if !path.ends_with(".py") || !text.contains("\\n") {
        return None;
    }
    if text.trim_end().contains('\n') {
        return breaks_as_meant(text, false);
    }
    let decoded = unescape(text);
    let starts_code = |line: &str| {
        line.starts_with([' ', '\t'])
            || ["def ", "class ", "return", "import ", "from ", "if ", "@"]
                .iter()
                .any(|start| line.starts_with(start))
    };
    let lines: Vec<&str> = decoded.lines().collect();
    (lines.len() >= 2 && lines[1..].iter().any(|l| starts_code(l))).then_some(decoded)
}

/// A whole Python file with its line breaks as meant (see [`breaks_as_meant`]): `None`
/// when it has none to mend, and for other files.
pub(crate) fn python_file_as_meant(path: &str, text: &str) -> Option<String> {
    if !path.ends_with(".py") {
        return None;
    }
    if !text.trim_end().contains('\n') {
        return twice_escaped_python(path, text);
    }
    let mut meant = breaks_as_meant(text, true);
    for mend in [docstring_periods_inside, one_quote_docstrings] {
        if let Some(mended) = mend(meant.as_deref().unwrap_or(text)) {
            meant = Some(mended);
        }
    }
    meant
}

/// A docstring (the first line after a `def` or `class` header, or of the file) opened
/// with one quote, run over three or more lines and closed by the same quote at the end
/// of a later line: only triple quotes may span lines in Python, so as written it is a
/// syntax error, and it can only mean a triple-quoted docstring. Its quotes are made
/// triple. (Over two lines, [`breaks_as_meant`] makes its line break `\n`.)
fn one_quote_docstrings(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let mut changed = false;
    // The triple quote of a string the line is in, which is text, not code.
    let mut in_string: Option<&str> = None;
    // Whether the next line of code is where a docstring goes.
    let mut docstring_next = true;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(open) = in_string {
            if line.matches(open).count() % 2 == 1 {
                in_string = None;
            }
            i += 1;
            continue;
        }
        let body = line.trim();
        if body.is_empty() || body.starts_with('#') {
            i += 1;
            continue;
        }
        let at_docstring = std::mem::replace(&mut docstring_next, false);
        in_string = PYTHON_QUOTES[..2]
            .iter()
            .copied()
            .find(|triple| line.matches(triple).count() % 2 == 1);
        let header = ["def ", "async def ", "class "]
            .iter()
            .any(|start| body.starts_with(start));
        if header && body.ends_with(':') {
            docstring_next = true;
        }
        let quote = ["\"", "'"]
            .into_iter()
            .find(|q| body.starts_with(q) && body.matches(q).count() == 1);
        let closing = quote.and_then(|q| {
            let j = (i + 1..lines.len()).find(|&j| lines[j].contains(q))?;
            let end = lines[j].trim_end();
            (j >= i + 2 && end.matches(q).count() == 1 && end.ends_with(q)).then_some((q, j))
        });
        let (true, Some((quote, j))) = (at_docstring && in_string.is_none(), closing) else {
            i += 1;
            continue;
        };
        let indent = &line[..line.len() - line.trim_start().len()];
        let triple = quote.repeat(3);
        out[i] = format!("{indent}{triple}{}", &line.trim_start()[1..]);
        let end = lines[j].trim_end();
        out[j] = format!("{}{triple}", &end[..end.len() - 1]);
        changed = true;
        i = j + 1;
    }
    changed.then(|| out.join("\n"))
}

/// What opens a Python string, the triple quotes first.
const PYTHON_QUOTES: [&str; 4] = ["\"\"\"", "'''", "\"", "'"];

/// A line that is a one-line string with a `.` after its closing quote (`"The area of a
/// rectangle".`), only ever a syntax error, with the `.` put inside the quotes. A model
/// that writes it so tends to write it so again in every fix round.
fn docstring_periods_inside(text: &str) -> Option<String> {
    let mut changed = false;
    // The triple quote of a string the line is in, which is text, not code.
    let mut in_string: Option<&str> = None;
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| {
            if let Some(open) = in_string {
                if line.matches(open).count() % 2 == 1 {
                    in_string = None;
                }
                return line.to_string();
            }
            in_string = PYTHON_QUOTES[..2]
                .iter()
                .copied()
                .find(|triple| line.matches(triple).count() % 2 == 1);
            let code = line.trim_end();
            let body = code.trim_start();
            let quote = PYTHON_QUOTES.into_iter().find(|q| body.starts_with(q));
            let Some(quote) = quote else {
                return line.to_string();
            };
            let Some(inner) = body
                .strip_suffix('.')
                .and_then(|b| b.strip_suffix(quote))
                .and_then(|b| b.strip_prefix(quote))
            else {
                return line.to_string();
            };
            if inner.contains(&quote[..1]) || inner.ends_with('\\') {
                return line.to_string();
            }
            changed = true;
            let indent = &code[..code.len() - body.len()];
            format!("{indent}{quote}{inner}.{quote}")
        })
        .collect();
    changed.then(|| lines.join("\n"))
}

/// Python with each `\n` that stands outside string literals and comments made a line
/// break: outside a string a backslash may only end a line, so such a `\n` is never code
/// as meant. In a `whole_file` (the scan then knows where strings are from the start),
/// also a real line break inside a one-quote string that closes on the next line is
/// made `\n` (`print(f'…{count}` / `')`: the model's `\n` decoded once too often);
/// such a string is a syntax error as written. `None` when there is nothing to
/// mend.
fn breaks_as_meant(text: &str, whole_file: bool) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    // The delimiter of the string the scan is in: `"`, `'`, `"""` or `'''`.
    let mut open: Option<&str> = None;
    let mut changed = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let step = match open {
            Some(quote) if rest.starts_with(quote) => {
                open = None;
                quote.len()
            }
            // An escape inside a string is two characters, whatever the second is.
            Some(_) if c == '\\' => 1 + rest[1..].chars().next().map_or(0, char::len_utf8),
            Some(quote) if c == '\n' && quote.len() == 1 => {
                let next_line = rest[1..].split('\n').next().unwrap_or_default();
                if whole_file && next_line.contains(quote) {
                    out.push_str("\\n");
                    changed = true;
                    rest = &rest[1..];
                    continue;
                }
                // Unclosed, the string is over: the scan must not run on in it.
                open = None;
                1
            }
            Some(_) => c.len_utf8(),
            None if c == '#' => rest.find('\n').unwrap_or(rest.len()),
            None if rest.starts_with("\\n") => {
                out.push('\n');
                changed = true;
                rest = &rest[2..];
                continue;
            }
            None => {
                open = PYTHON_QUOTES
                    .into_iter()
                    .find(|quote| rest.starts_with(quote));
                open.map_or(c.len_utf8(), str::len)
            }
        };
        out.push_str(&rest[..step]);
        rest = &rest[step..];
    }
    changed.then_some(out)
}

/// `\n`, `\t`, `\"`, `\'` and `\\` written as two characters, read as one.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(q @ ('"' | '\'' | '\\')) => out.push(q),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// A place in the file found other than exactly.
#[derive(Debug, PartialEq)]
struct LooseMatch {
    /// Byte range in the file.
    start: usize,
    end: usize,
    /// The indentation of the matched lines in the file, and of `old`'s first line.
    indent: String,
    old_indent: String,
}

impl LooseMatch {
    fn apply(&self, text: &str, new: &str, how: &str) -> Applied {
        let new = self.reindent(new);
        Applied {
            edited: format!("{}{new}{}", &text[..self.start], &text[self.end..]),
            detail: format!(
                "replaced {} line(s) with {} ({how})",
                text[self.start..self.end].lines().count().max(1),
                new.lines().count()
            ),
        }
    }

    /// `new` at the file's indentation where the model wrote it at another.
    fn reindent(&self, new: &str) -> String {
        if self.indent == self.old_indent {
            return new.to_string();
        }
        new.split('\n')
            .map(|line| match line.strip_prefix(self.old_indent.as_str()) {
                Some(rest) if !line.trim().is_empty() => format!("{}{rest}", self.indent),
                _ => line.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A line as the loose rules compare it: trimmed, `'` read as `"`.
fn normalized(line: &str) -> String {
    line.trim().replace('\'', "\"")
}

fn indent_of(line: &str) -> String {
    line[..line.len() - line.trim_start().len()].to_string()
}

/// Each line of `text` with the byte offset it starts at (without its line break).
fn lines_at(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        lines.push((at, line.trim_end_matches(['\n', '\r'])));
        at += line.len();
    }
    lines
}

/// The span of a run of file lines, for `new` written at `old_first_line`'s indentation.
fn span(window: &[(usize, &str)], old_first_line: &str) -> LooseMatch {
    let (start, first) = window[0];
    let (last_start, last) = window[window.len() - 1];
    LooseMatch {
        start,
        end: last_start + last.len(),
        indent: indent_of(first),
        old_indent: indent_of(old_first_line),
    }
}

/// Rule 3: `old`'s lines equal to whole lines of the file once both are normalized (a
/// one-line `old` may also be part of a line).
fn loose_matches(text: &str, old: &str) -> Vec<LooseMatch> {
    let wanted: Vec<&str> = old.trim_matches(['\n', '\r']).lines().collect();
    if wanted.iter().all(|l| l.trim().is_empty()) {
        return Vec::new();
    }
    let wanted_normalized: Vec<String> = wanted.iter().map(|l| normalized(l)).collect();
    let lines = lines_at(text);
    let mut found: Vec<LooseMatch> = lines
        .windows(wanted.len())
        .filter(|window| {
            window
                .iter()
                .zip(&wanted_normalized)
                .all(|((_, l), w)| normalized(l) == *w)
        })
        .map(|window| span(window, wanted[0]))
        .collect();
    if found.is_empty() && wanted.len() == 1 {
        // Part of a line, in other quotes: the same length once quotes are alike.
        let needle = wanted_normalized[0].as_str();
        let haystack = text.replace('\'', "\"");
        found = haystack
            .match_indices(needle)
            .map(|(start, _)| LooseMatch {
                start,
                end: start + needle.len(),
                indent: String::new(),
                old_indent: String::new(),
            })
            .collect();
    }
    found
}

/// Non-blank lines, normalized, one string.
fn joined(lines: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    lines
        .into_iter()
        .map(|l| normalized(l.as_ref()))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Rule 4: the one run of file lines (as many as `old` has, or one more or fewer) whose
/// text is at least 90% alike to `old`'s, with no other run (not overlapping it) nearly
/// as alike. Returns the place and how alike it is.
fn approximate_match(text: &str, old: &str) -> Option<(LooseMatch, f32)> {
    let wanted: Vec<&str> = old.trim_matches(['\n', '\r']).lines().collect();
    let target = joined(&wanted);
    let lines = lines_at(text);
    if target.chars().filter(|c| !c.is_whitespace()).count() < APPROXIMATE_MIN_CHARS
        || wanted.len() > APPROXIMATE_MAX_OLD_LINES
        || lines.len() > APPROXIMATE_MAX_FILE_LINES
    {
        return None;
    }
    let mut scored: Vec<(f32, usize, usize)> = Vec::new(); // (alike, first line, line count)
    for count in [
        wanted.len(),
        wanted.len() + 1,
        wanted.len().saturating_sub(1),
    ] {
        if count == 0 || count > lines.len() {
            continue;
        }
        for (first, window) in lines.windows(count).enumerate() {
            // A run must start and end on a line with text, as old_text does.
            if window[0].1.trim().is_empty() || window[count - 1].1.trim().is_empty() {
                continue;
            }
            let here = joined(window.iter().map(|(_, l)| *l));
            // Similarity is at most 2·min/(a+b) of the lengths: skip runs that cannot reach it.
            let (a, b) = (here.len() as f32, target.len() as f32);
            if 2.0 * a.min(b) / (a + b) < APPROXIMATE_AT_LEAST {
                continue;
            }
            let alike = TextDiff::from_chars(here.as_str(), target.as_str()).ratio();
            if alike >= APPROXIMATE_AT_LEAST - 0.05 {
                scored.push((alike, first, count));
            }
        }
    }
    scored.sort_by(|x, y| y.0.total_cmp(&x.0));
    let &(best, first, count) = scored.first()?;
    if best < APPROXIMATE_AT_LEAST {
        return None;
    }
    // Another place nearly as alike, not overlapping: ambiguous, so no match.
    let overlaps = |f: usize, c: usize| f < first + count && first < f + c;
    if scored
        .iter()
        .skip(1)
        .any(|&(alike, f, c)| alike > best - 0.05 && !overlaps(f, c))
    {
        return None;
    }
    Some((span(&lines[first..first + count], wanted[0]), best))
}

/// `new` is the whole file: at least 60% of the file's words are in it, in order (the
/// file's text with a docstring reflowed, an import added, a body filled in), in a file
/// of a few words or more. Code to add beside the file shares few of its words in order.
/// An empty `old_text` with the whole new file, led by a new import line, is the file:
/// appending it would leave the old file and the new one both in place.
pub(crate) fn is_whole_file(text: &str, new: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .map(|w| w.replace('\'', "\""))
            .collect()
    };
    let (file, new) = (words(text), words(new));
    if file.len() < WHOLE_FILE_MIN_WORDS || new.len() * 10 < file.len() * 8 {
        return false;
    }
    let kept: usize = similar::capture_diff_slices(similar::Algorithm::Myers, &file, &new)
        .iter()
        .filter_map(|op| match op {
            similar::DiffOp::Equal { len, .. } => Some(*len),
            _ => None,
        })
        .sum();
    kept * 10 >= file.len() * WHOLE_FILE_KEPT_TENTHS
}

/// Whether `new`, taken as the file, would keep at least half of the functions and
/// classes the file defines. In a small file a new definition shares most of its words
/// with its neighbour (`def area(width, height)` and `def perimeter(width, height)`), yet
/// it is code to add beside them, not the file: taken as the file, it would drop them.
/// Files of no language with definitions, or that define nothing, pass.
fn keeps_definitions(text: &str, new: &str, file_name: &str) -> bool {
    let had = names_defined(file_name, text);
    if had.is_empty() {
        return true;
    }
    let now = names_defined(file_name, new);
    had.iter().filter(|name| now.contains(*name)).count() * 2 >= had.len()
}

/// The definitions `new`, written as the whole of a file that now holds `text`, would
/// drop, when `new` is only a part of that file: it keeps neither most of the file's
/// words ([`is_whole_file`]) nor half of its functions and classes. `None` when `new`
/// can stand for the file, or the file defines nothing.
pub(crate) fn dropped_by_partial_write(
    text: &str,
    new: &str,
    file_name: &str,
) -> Option<Vec<String>> {
    if is_whole_file(text, new) || keeps_definitions(text, new, file_name) {
        return None;
    }
    let now = names_defined(file_name, new);
    let mut dropped: Vec<String> = names_defined(file_name, text)
        .into_iter()
        .filter(|name| !now.contains(name))
        .collect();
    dropped.sort();
    Some(dropped)
}

/// An empty `old_text`: `new` at the end of the file, in Python before a closing
/// `if __name__ == "__main__":` block.
fn append(text: &str, new: &str, python: bool) -> Applied {
    let br = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let addition = new.trim_matches(['\n', '\r']).replace("\r\n", "\n");
    let added = addition.lines().count();
    let addition = format!("{}{br}", addition.replace('\n', br));
    if python && let Some(at) = main_block_start(text) {
        let before = text[..at].trim_end_matches(['\n', '\r']);
        return Applied {
            edited: format!("{before}{br}{br}{br}{addition}{br}{br}{}", &text[at..]),
            detail: format!(
                "old_text was empty: inserted {added} line(s) before the `if __name__ == \"__main__\":` block"
            ),
        };
    }
    let separator = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        br
    };
    Applied {
        edited: format!("{text}{separator}{addition}"),
        detail: format!("old_text was empty: appended {added} line(s) at the end of the file"),
    }
}

/// A top-level Python definition (`def`, `async def` or `class`, with its decorators):
/// its name and its span of text, trailing blank lines left out.
struct Definition {
    name: String,
    start: usize,
    end: usize,
}

/// The top-level definitions of Python `text`, and its other top-level lines (imports,
/// assignments, the main block) as (offset, line).
fn python_definitions(text: &str) -> (Vec<Definition>, Vec<(usize, &str)>) {
    let lines = lines_at(text);
    let mut definitions: Vec<Definition> = Vec::new();
    let mut others = Vec::new();
    let mut decorators_from: Option<usize> = None;
    let mut open: Option<Definition> = None;
    for (i, &(at, line)) in lines.iter().enumerate() {
        if line.starts_with('#') {
            // A comment between definitions belongs to neither.
            continue;
        }
        let top_level = !line.trim().is_empty() && !line.starts_with([' ', '\t']);
        if !top_level {
            if line.trim().is_empty() {
                continue;
            }
            if let Some(definition) = open.as_mut() {
                definition.end = at + line.len();
            }
            continue;
        }
        // A top-level line closes the definition before it (`)` and `]` close a
        // signature or a literal written over several lines).
        if line.starts_with([')', ']', '}']) {
            if let Some(definition) = open.as_mut() {
                definition.end = at + line.len();
            }
            continue;
        }
        definitions.extend(open.take());
        if line.starts_with('@') {
            decorators_from.get_or_insert(at);
            continue;
        }
        if let Some(name) = defined_name(line, Language::Python) {
            open = Some(Definition {
                name,
                start: decorators_from.take().unwrap_or(at),
                end: at + line.len(),
            });
        } else {
            decorators_from = None;
            others.push(lines[i]);
        }
    }
    definitions.extend(open);
    (definitions, others)
}

/// An empty `old_text` whose `new_text` redefines functions or classes the Python file
/// already has: those definitions are replaced, the new ones appended, new imports put
/// with the file's imports. Appended after a stub of the same name, a new definition
/// would leave the stub as the file's first one.
/// `None` when `new_text` is not only definitions and imports, or redefines nothing.
fn redefine(text: &str, new: &str, file_name: &str, why: &str) -> Option<Applied> {
    let (new_definitions, new_others) = python_definitions(new);
    let imports = |l: &str| l.starts_with("import ") || l.starts_with("from ");
    if !new_others.iter().all(|(_, l)| imports(l)) {
        return None;
    }
    let (definitions, others) = python_definitions(text);
    let existing = |name: &str| definitions.iter().find(|d| d.name == name);
    let mut replaced: Vec<(&Definition, &str)> = new_definitions
        .iter()
        .filter_map(|n| existing(&n.name).map(|d| (d, &new[n.start..n.end])))
        .collect();
    if replaced.is_empty() {
        return None;
    }
    let names: Vec<String> = replaced
        .iter()
        .map(|(d, _)| format!("`{}`", d.name))
        .collect();
    replaced.sort_by_key(|(d, _)| std::cmp::Reverse(d.start));
    let mut edited = text.to_string();
    for (definition, with) in &replaced {
        edited.replace_range(definition.start..definition.end, with);
    }
    let mut detail = format!(
        "{why}, and new_text defines {}, which {file_name} already defines: replaced {}",
        names.join(", "),
        if names.len() == 1 {
            "that definition"
        } else {
            "those definitions"
        }
    );
    let added: Vec<&str> = new_definitions
        .iter()
        .filter(|n| existing(&n.name).is_none())
        .map(|n| &new[n.start..n.end])
        .collect();
    if !added.is_empty() {
        edited = append(&edited, &added.join("\n\n\n"), true).edited;
        detail.push_str(&format!("; added {}", added.len()));
    }
    let have: Vec<&str> = others.iter().map(|(_, l)| l.trim()).collect();
    let new_imports: Vec<&str> = new_others
        .iter()
        .map(|(_, l)| l.trim())
        .filter(|l| !have.contains(l))
        .collect();
    if !new_imports.is_empty() {
        // With the file's imports, else before its first definition.
        let at = others
            .iter()
            .find(|(_, l)| imports(l))
            .map(|(at, _)| *at)
            .or_else(|| definitions.iter().map(|d| d.start).min())
            .unwrap_or(0);
        let spacing = if others.iter().any(|(_, l)| imports(l)) {
            "\n"
        } else {
            "\n\n\n"
        };
        edited.insert_str(at, &format!("{}{spacing}", new_imports.join("\n")));
        detail.push_str(&format!("; added {}", new_imports.join(", ")));
    }
    Some(Applied { edited, detail })
}

/// Where a Python file's closing main block starts: an unindented
/// `if __name__ == "__main__":` followed only by indented or blank lines.
fn main_block_start(text: &str) -> Option<usize> {
    let lines = lines_at(text);
    let index = lines.iter().rposition(|(_, l)| {
        l.starts_with("if __name__") && l.contains("__main__") && l.trim_end().ends_with(':')
    })?;
    lines[index + 1..]
        .iter()
        .all(|(_, l)| l.trim().is_empty() || l.starts_with([' ', '\t']))
        .then_some(lines[index].0)
}

/// The text to copy `old_text` from: a small file whole, else the run of lines sharing
/// the most lines with `old_text`, with a few lines around it.
fn nearest(text: &str, old: &str, file_name: &str) -> String {
    let lines = lines_at(text);
    if lines.len() <= SHOW_WHOLE_FILE_LINES && text.len() <= SHOW_WHOLE_FILE_BYTES {
        return format!(
            "{file_name} holds:\n```\n{}\n```",
            text.trim_end_matches('\n')
        );
    }
    let wanted: Vec<String> = old
        .lines()
        .map(normalized)
        .filter(|l| !l.is_empty())
        .collect();
    let count = wanted.len().clamp(1, lines.len());
    let shared = |window: &[(usize, &str)]| {
        window
            .iter()
            .filter(|(_, l)| {
                let l = normalized(l);
                !l.is_empty()
                    && wanted
                        .iter()
                        .any(|w| *w == l || (w.len() > 8 && l.contains(w.as_str())))
            })
            .count()
    };
    let Some((first, best)) = lines
        .windows(count)
        .enumerate()
        .map(|(first, window)| (first, shared(window)))
        .max_by_key(|&(first, shared)| (shared, std::cmp::Reverse(first)))
    else {
        return String::new();
    };
    if best == 0 {
        return format!(
            "no line of {file_name} is like old_text; read the file (file_read) before editing it"
        );
    }
    let from = first.saturating_sub(NEAREST_CONTEXT_LINES);
    let to = (first + count + NEAREST_CONTEXT_LINES).min(lines.len());
    let shown: Vec<&str> = lines[from..to].iter().map(|(_, l)| *l).collect();
    format!(
        "the lines of {file_name} closest to old_text (lines {}-{}):\n```\n{}\n```",
        from + 1,
        to,
        shown.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(text: &str, old: &str, new: &str) -> Applied {
        apply(text, old, new, "m.py").unwrap_or_else(|miss| panic!("{miss:?}"))
    }

    #[test]
    fn python_written_as_one_twice_escaped_line_is_decoded() {
        let one_line =
            r#"def word_count(text):\n    \"The number of words.\"\n    return len(text.split())"#;
        assert_eq!(
            twice_escaped_python("textutil.py", one_line).as_deref(),
            Some(
                "def word_count(text):\n    \"The number of words.\"\n    return len(text.split())"
            )
        );
        // A string with a line break in it is code as written, and so is any other file.
        assert!(twice_escaped_python("a.py", r#"print("a\nb")"#).is_none());
        assert!(twice_escaped_python("a.py", "x = 1\ny = '\\n    '\n").is_none());
        assert!(twice_escaped_python("notes.txt", one_line).is_none());
    }

    #[test]
    fn a_line_break_escaped_outside_any_string_is_made_one() {
        // A docstring line run on into the return with `\n` written as two characters.
        let written = "def perimeter(width, height):\n    \"The perimeter.\"\\n    return 2 * (width + height)\n";
        assert_eq!(
            twice_escaped_python("geometry.py", written).as_deref(),
            Some(
                "def perimeter(width, height):\n    \"The perimeter.\"\n    return 2 * (width + height)\n"
            )
        );
        // Inside strings (one-quote, triple-quoted, with escaped quotes) and comments, a
        // `\n` is code as written.
        let strings = "a = \"x\\ny\"\nb = 'it\\'s\\n'\n# a \\n in a comment\nc = \"\"\"doc\nwith \\n and 'quotes'\"\"\"\nprint(f\"{a}\\n\")\n";
        assert_eq!(twice_escaped_python("a.py", strings), None);
        // After those, a stray one is still found.
        let after = format!("{strings}x = 1\\ny = 2\n");
        assert_eq!(
            twice_escaped_python("a.py", &after),
            Some(format!("{strings}x = 1\ny = 2\n"))
        );
        assert_eq!(python_file_as_meant("a.py", strings), None);
    }

    #[test]
    fn a_period_after_a_docstring_s_closing_quote_goes_inside_it() {
        let written = "def area(w, h):\n    \"The area of a rectangle\".\n    return w * h\n\n\ndef f():\n    '''Doc'''.\n    return 'a'.upper()\n";
        assert_eq!(
            python_file_as_meant("geometry.py", written).as_deref(),
            Some(
                "def area(w, h):\n    \"The area of a rectangle.\"\n    return w * h\n\n\ndef f():\n    '''Doc.'''\n    return 'a'.upper()\n"
            )
        );
        // A method call on a string, or two strings, are code as written, and a line of
        // a docstring's text is text.
        let code =
            "x = \"a\".upper()\n\"a\" + \"b\"\n'a'.join(['b'])\n\"\"\"Doc\n\"quoted\".\n\"\"\"\n";
        assert_eq!(python_file_as_meant("a.py", code), None);
    }

    #[test]
    fn a_docstring_over_lines_in_one_quote_is_given_three() {
        // Triple quotes written as one, in a function's, a class's and the file's
        // docstring: each a syntax error as written.
        let written = "\"Stock levels.\n\nOne line a product.\n\"\n\n\ndef total_value(items):\n    \"The total value of (price, quantity) pairs.\n\n    It counts every item.\n    \"\n    return sum(p * q for p, q in items)\n\n\nclass Shelf:\n    'A shelf.\n\n    Holds items.'\n    pass\n";
        assert_eq!(
            python_file_as_meant("inventory.py", written).as_deref(),
            Some(
                "\"\"\"Stock levels.\n\nOne line a product.\n\"\"\"\n\n\ndef total_value(items):\n    \"\"\"The total value of (price, quantity) pairs.\n\n    It counts every item.\n    \"\"\"\n    return sum(p * q for p, q in items)\n\n\nclass Shelf:\n    '''A shelf.\n\n    Holds items.'''\n    pass\n"
            )
        );
        // Code as written is left: a one-quote string closed on its line, a string
        // that is not where a docstring goes, a docstring already triple, and one
        // whose closing quote does not end its line.
        let code = "def f(x):\n    \"Doc.\"\n    y = (\n        \"a\n        b\n        c\"\n    )\n\n\ndef g():\n    \"\"\"Doc\n\n    more\n    \"\"\"\n\n\ndef h():\n    \"Doc\n\n    x = \"y\" + z\n";
        assert_eq!(python_file_as_meant("a.py", code), None);
    }

    #[test]
    fn a_line_break_inside_a_one_quote_string_of_a_whole_file_is_made_an_escape() {
        // `\n` meant inside the f-string, decoded to a line break: an unterminated
        // string.
        let written =
            "def count(path):\n    n = 3\n    print(f'lines in {path}: {n}\n')\n    return n\n";
        assert_eq!(
            python_file_as_meant("count_lines.py", written).as_deref(),
            Some(
                "def count(path):\n    n = 3\n    print(f'lines in {path}: {n}\\n')\n    return n\n"
            )
        );
        // Not in a piece of a file (a docstring's `it's` may open no string there), and
        // not when the string does not close on the next line.
        assert_eq!(twice_escaped_python("a.py", written), None);
        let unclosed = "x = 'abc\ny = 2\n";
        assert_eq!(python_file_as_meant("a.py", unclosed), None);
        assert_eq!(python_file_as_meant("notes.txt", written), None);
    }

    #[test]
    fn twice_escaped_old_text_is_read_with_its_escapes_decoded() {
        // old_text `def calc(prices):\n    \"\"\"The sum…` with `\n` and `\"` literal.
        let text = "def calc(prices):\n    \"\"\"The sum.\"\"\"\n    return sum(prices)\n";
        let done = applied(
            text,
            r#"def calc(prices):\n    \"\"\"The sum.\"\"\""#,
            r#"def compute_total(prices):\n    \"\"\"The sum.\"\"\""#,
        );
        assert_eq!(
            done.edited,
            "def compute_total(prices):\n    \"\"\"The sum.\"\"\"\n    return sum(prices)\n"
        );
        assert!(done.detail.contains("escapes"), "{}", done.detail);
        // A file that holds `\n` literally is matched as written, never decoded.
        let literal = "print(\"a\\nb\")\n";
        assert_eq!(
            applied(literal, "print(\"a\\nb\")", "print(\"a\\tb\")").edited,
            "print(\"a\\tb\")\n"
        );
    }

    #[test]
    fn a_docstring_copied_with_a_typo_matches_approximately() {
        // A stray `\n"` inside the docstring line of old_text.
        let text = "def total_value(items):\n    \"The total value of (price, quantity) pairs.\"\n    total = 0\n    for price, quantity in items:\n        total += price\n    return total\n";
        let done = applied(
            text,
            "def total_value(items):\n    \"The total value of (price, quantity) pairs.\n\"\n    total = 0\n    for price, quantity in items:\n        total += price",
            "def total_value(items):\n    \"The total value of (price, quantity) pairs.\"\n    total = 0\n    for price, quantity in items:\n        total += price * quantity",
        );
        assert!(
            done.edited
                .contains("total += price * quantity\n    return total\n"),
            "{}",
            done.edited
        );
        assert!(done.detail.contains("approximately"), "{}", done.detail);
    }

    #[test]
    fn approximate_matching_refuses_short_text_and_two_alike_places() {
        let text = "x = compute(alpha)\ny = 1\n";
        assert!(matches!(
            apply(text, "x = compute(alphb)", "x = 2", "m.py"),
            Err(Miss::NotFound { .. })
        ));
        let twice = "def f(a):\n    return alpha_value + 1000000\n\ndef g(a):\n    return alpha_value + 1000001\n";
        assert!(matches!(
            apply(
                twice,
                "    return alpha_value + 1000002",
                "    return a",
                "m.py"
            ),
            Err(Miss::NotFound { .. })
        ));
    }

    #[test]
    fn new_text_that_is_the_whole_file_replaces_it() {
        // old_text "--shout" (not in the file), new_text the whole new file.
        let text = "import argparse\n\n\ndef main():\n    args = parse()\n    print(args.name)\n";
        let new = "import argparse\n\n\ndef main():\n    args = parse()\n    if args.shout:\n        print(args.name.upper())\n    else:\n        print(args.name)\n";
        let done = applied(text, "--shout", new);
        assert_eq!(done.edited, new);
        assert!(done.detail.contains("whole file"), "{}", done.detail);
        // A short new_text starting like the file is an edit that missed, not the file.
        assert!(matches!(
            apply(text, "--shout", "import argparse\nimport sys\n", "m.py"),
            Err(Miss::NotFound { .. })
        ));
    }

    #[test]
    fn the_whole_file_led_by_a_new_import_replaces_it_and_code_beside_it_appends() {
        // An empty old_text and the whole file, a typing import first and the
        // docstring on one line: appended, it would leave two definitions and a broken
        // file.
        let stub = "def fizzbuzz(n: int) -> list:\n    \"\"\"Return the strings for 1..n: Fizz for\n    multiples of 3, else the number.\"\"\"\n";
        let whole = "from typing import *\n\n\ndef fizzbuzz(n: int) -> list:\n    \"\"\"Return the strings for 1..n: Fizz for multiples of 3, else the number.\"\"\"\n    return [str(i) for i in range(1, n + 1)]\n";
        assert_eq!(applied(stub, "", whole).edited, whole);
        let beside = "def buzz(n):\n    return [i for i in range(n) if i % 5 == 0]\n";
        assert!(
            applied(stub, "", beside)
                .edited
                .starts_with(stub.trim_end())
        );
    }

    #[test]
    fn a_part_written_as_the_whole_file_is_told_apart_from_the_file() {
        let file = "import math\n\n\ndef area(w, h):\n    \"\"\"The area of a w x h rectangle.\"\"\"\n    return w * h\n\n\ndef circle(r):\n    \"\"\"The area of a circle of radius r.\"\"\"\n    return math.pi * r * r\n\n\nif __name__ == \"__main__\":\n    print(area(2, 3))\n";
        let both = Some(vec!["area".to_string(), "circle".to_string()]);
        // A changed line, a new function, a statement: parts.
        for part in [
            "    return w * h + 1\n",
            "def square(s):\n    return s * s\n",
            "print(circle(1))\n",
        ] {
            assert_eq!(
                dropped_by_partial_write(file, part, "shapes.py"),
                both,
                "{part}"
            );
        }
        // The file with a function added, or one of its two renamed: the file.
        let added = format!("{file}\n\ndef square(s):\n    return s * s\n");
        assert_eq!(dropped_by_partial_write(file, &added, "shapes.py"), None);
        let renamed = file.replace("def circle(r)", "def disc(r)");
        assert_eq!(dropped_by_partial_write(file, &renamed, "shapes.py"), None);
        // A file that defines nothing, or of a language with no definitions read.
        assert_eq!(
            dropped_by_partial_write("x = 1\ny = 2\n", "x = 3\n", "c.py"),
            None
        );
        assert_eq!(dropped_by_partial_write(file, "x", "shapes.txt"), None);
    }

    #[test]
    fn a_new_definition_shaped_like_a_small_file_s_only_one_is_added_beside_it() {
        // Most of the file's words, in order, but none of its definitions: new code.
        let text = "def area(width, height):\n    \"\"\"The area of a width x height rectangle.\"\"\"\n    return width * height\n";
        let new = "def perimeter(width, height):\n    \"\"\"The perimeter of a width x height rectangle.\"\"\"\n    return 2 * (width + height)";
        assert!(
            is_whole_file(text, new),
            "the words alone would say whole file"
        );
        let done = applied(text, "", new);
        assert!(done.edited.starts_with(text), "{}", done.edited);
        assert!(done.edited.contains("def perimeter("), "{}", done.edited);
        assert!(!done.detail.contains("whole file"), "{}", done.detail);
        // An old_text not in the file stays a miss, not a file made of new_text.
        assert!(matches!(
            apply(text, "def perimeter(w, h):", new, "m.py"),
            Err(Miss::NotFound { .. })
        ));
        // Keeping one of two definitions is a rewrite (one renamed, one fixed).
        let two = "def area(w, h):\n    return w * h\n\n\ndef side(w):\n    return w\n";
        let rewrite = "def area(w, h):\n    return w * h\n\n\ndef edge(w):\n    return w\n";
        assert_eq!(applied(two, "", rewrite).edited, rewrite);
        // Text of a file with no definitions is judged by its words alone.
        let notes = "width and height of the box\nin centimetres, rounded\n";
        let reworded = "width and height of the box\nin millimetres, rounded\n";
        assert_eq!(
            apply(notes, "", reworded, "notes.txt").unwrap().edited,
            reworded
        );
    }

    #[test]
    fn empty_old_text_redefining_a_python_function_replaces_its_definition() {
        // `def is_palindrome` with a body, given to append after the stub of the same
        // name.
        let stub = "\"\"\"Text helpers.\"\"\"\n\n\ndef is_palindrome(text: str) -> bool:\n    \"\"\"True when text reads the same backwards.\"\"\"\n\n\n@cache\ndef shout(text):\n    return text.upper()\n\n\nif __name__ == \"__main__\":\n    print(is_palindrome(\"abba\"))\n";
        let body = "import re\n\ndef is_palindrome(text: str) -> bool:\n    r = re.sub('[^a-z0-9]', '', text.lower())\n    return r == r[::-1]\n\n\ndef whisper(text):\n    return text.lower()\n";
        let done = applied(stub, "", body);
        assert_eq!(
            done.edited,
            "\"\"\"Text helpers.\"\"\"\n\n\nimport re\n\n\ndef is_palindrome(text: str) -> bool:\n    r = re.sub('[^a-z0-9]', '', text.lower())\n    return r == r[::-1]\n\n\n@cache\ndef shout(text):\n    return text.upper()\n\n\ndef whisper(text):\n    return text.lower()\n\n\nif __name__ == \"__main__\":\n    print(is_palindrome(\"abba\"))\n"
        );
        assert!(
            done.detail
                .contains("defines `is_palindrome`, which m.py already defines")
                && done.detail.contains("added import re"),
            "{}",
            done.detail
        );
        // A decorated definition is replaced with its decorators.
        let shout = applied(
            stub,
            "",
            "@cache\ndef shout(text):\n    return text.upper() + \"!\"\n",
        );
        assert!(
            shout
                .edited
                .contains("@cache\ndef shout(text):\n    return text.upper() + \"!\"\n\n\nif")
        );
        assert_eq!(shout.edited.matches("@cache").count(), 1);
        // Code that is not only definitions still appends.
        let mixed = applied(
            stub,
            "",
            "def is_palindrome(t):\n    return True\n\nprint(1)\n",
        );
        assert!(mixed.detail.contains("inserted"), "{}", mixed.detail);
    }

    #[test]
    fn the_same_text_as_old_and_new_text_replaces_the_definition_it_holds() {
        let file = "import math\n\n\ndef area(r):\n    \"\"\"The area of a circle of radius r.\"\"\"\n\n\ndef rim(r):\n    return 2 * math.pi * r\n";
        let done_area = "def area(r):\n    \"\"\"The area of a circle of radius r.\"\"\"\n    return math.pi * r * r\n";
        let want = "import math\n\n\ndef area(r):\n    \"\"\"The area of a circle of radius r.\"\"\"\n    return math.pi * r * r\n\n\ndef rim(r):\n    return 2 * math.pi * r\n";
        let on = |_: &str| true;
        let (done, repair) = apply_with(file, done_area, done_area, "circle.py", &on).unwrap();
        assert_eq!(done.edited, want);
        assert_eq!(repair, Some(REPAIR_EDIT_SAME_TEXTS));
        assert!(
            done.detail
                .contains("were the same, and the file does not have that text")
                && done.detail.contains("`area`"),
            "{}",
            done.detail
        );
        // Copied from after the file's `def `: the header gets it back.
        let no_def = done_area.strip_prefix("def ").unwrap();
        let (done, _) = apply_with(file, no_def, no_def, "circle.py", &on).unwrap();
        assert_eq!(done.edited, want);

        // Text the file has: the file stays as it is, which is not a miss.
        let (kept, repair) =
            apply_with(file, "def rim(r):", "def rim(r):", "circle.py", &on).unwrap();
        assert_eq!((kept.edited.as_str(), repair), (file, None));
        assert!(
            kept.detail.contains("circle.py already has that text"),
            "{}",
            kept.detail
        );

        // What it must leave alone: text that defines nothing the file defines, a
        // definition beside other code, another language, and the repair switched off.
        let same = |text: &str, name: &str| apply_with(file, text, text, name, &on).unwrap_err();
        let not_file = Miss::SameTexts;
        assert_eq!(
            same("def volume(r):\n    return r\n", "circle.py"),
            not_file
        );
        assert_eq!(same("print(area(2))\n", "circle.py"), not_file);
        assert_eq!(
            same(&format!("{done_area}\nprint(area(2))\n"), "circle.py"),
            not_file
        );
        assert_eq!(same(done_area, "circle.txt"), not_file);
        let off = |id: &str| id != REPAIR_EDIT_SAME_TEXTS;
        assert_eq!(
            apply_with(file, done_area, done_area, "circle.py", &off).unwrap_err(),
            not_file
        );
    }

    #[test]
    fn an_edit_made_before_leaves_the_file_as_it_is() {
        let before = "def total(prices):\n    return sum(prices)\n\n\ndef cheapest(prices):\n    \"\"\"The lowest price, or None for no prices.\"\"\"\n    return min(prices, default=None)\n";
        let old = "def total(prices):\n    return sum(prices)";
        let new = "def total(prices, tax=0.0):\n    return sum(prices) * (1 + tax)";
        let on = |_: &str| true;
        let (made, repair) = apply_with(before, old, new, "cart.py", &on).unwrap();
        assert_eq!(repair, None, "the first time it is the edit as written");
        // The same call again: old_text is gone and new_text is there.
        let (again, repair) = apply_with(&made.edited, old, new, "cart.py", &on).unwrap();
        assert_eq!(again.edited, made.edited);
        assert_eq!(repair, Some(REPAIR_EDIT_ALREADY_MADE));
        assert!(
            again.detail.contains("this edit was made before"),
            "{}",
            again.detail
        );
        // Indented differently, it is still the text the file has.
        let reindented = new.replace("    ", "  ");
        let (again, _) = apply_with(&made.edited, old, &reindented, "cart.py", &on).unwrap();
        assert_eq!(again.edited, made.edited);

        // A short new_text may be in the file for other reasons, and other text the file
        // lacks, or the repair switched off, stays a miss that shows the file.
        let short = apply_with(
            &made.edited,
            "return 0",
            "return sum(prices)",
            "cart.py",
            &on,
        );
        assert!(matches!(short, Err(Miss::NotFound { .. })), "{short:?}");
        let other = apply_with(
            &made.edited,
            old,
            "def total(items):\n    return len(items)",
            "cart.py",
            &on,
        );
        assert!(matches!(other, Err(Miss::NotFound { .. })), "{other:?}");
        let off = |id: &str| id != REPAIR_EDIT_ALREADY_MADE;
        let switched_off = apply_with(&made.edited, old, new, "cart.py", &off);
        assert!(
            matches!(switched_off, Err(Miss::NotFound { .. })),
            "{switched_off:?}"
        );
    }

    #[test]
    fn empty_old_text_appends_before_the_main_block() {
        let script = "def area(w, h):\n    return w * h\n\n\nif __name__ == \"__main__\":\n    print(area(2, 3))\n";
        let done = applied(script, "", "def perimeter(w, h):\n    return 2 * (w + h)");
        assert_eq!(
            done.edited,
            "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n\n\nif __name__ == \"__main__\":\n    print(area(2, 3))\n"
        );
        let plain = apply("a = 1", "", "b = 2\n", "notes.txt").unwrap();
        assert_eq!(plain.edited, "a = 1\nb = 2\n");
        assert!(plain.detail.contains("appended 1 line"), "{}", plain.detail);
        // The whole file as new_text with an empty old_text replaces, never duplicates.
        let whole = "def area(w, h):\n    return w * h\n\n\nif __name__ == \"__main__\":\n    print(area(4, 5))\n";
        assert_eq!(applied(script, "", whole).edited, whole);
    }

    #[test]
    fn a_miss_shows_a_small_file_whole_and_the_closest_lines_of_a_large_one() {
        let small = "DEFAULTS = {\"retries\": \"3\"}\n";
        let Err(Miss::NotFound { nearest }) =
            apply(small, "DEFAULTS['retries'] = '3'", "x", "s.py")
        else {
            panic!("expected a miss");
        };
        assert_eq!(
            nearest,
            "s.py holds:\n```\nDEFAULTS = {\"retries\": \"3\"}\n```"
        );

        let large: String = (0..200).map(|i| format!("value_{i} = {i}\n")).collect();
        let Err(Miss::NotFound { nearest }) = apply(
            &large,
            "value_100 = 'a hundred'\nvalue_101 = 101",
            "x",
            "big.py",
        ) else {
            panic!("expected a miss");
        };
        assert!(
            nearest.starts_with("the lines of big.py closest to old_text (lines 98-105)"),
            "{nearest}"
        );
        assert!(nearest.contains("value_101 = 101"), "{nearest}");
    }
}
