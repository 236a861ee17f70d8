//! docs/guarantees.md, checked on every run: every test it names still
//! exists, every promise has a number of its own and names at least one
//! test (unless it sits under "Promises without a test yet"), and the
//! README points to the list.
//!
//! A reference is a code span `FILE::NAME`: a `.rs` file and a function it
//! defines (`fn NAME`), a `.py` file and a `def NAME` in it, or a `.sh`
//! file and a quoted substring of it (`FILE::"words of a check"`). Code
//! spans whose left side is not such a file (`raftlock_client::Client`) are not
//! references.

use std::collections::BTreeSet;
use std::path::PathBuf;

/// The list, from the repository root.
const GUARANTEES: &str = "docs/guarantees.md";

/// The heading of the last section, whose promises need no test.
const UNTESTED: &str = "## Promises without a test yet";

fn repo() -> PathBuf {
    crate::repo_root()
}

/// A file of the repository, `None` if it cannot be read.
fn read_repo_file(path: &str) -> Option<String> {
    std::fs::read_to_string(repo().join(path)).ok()
}

/// What a reference names in its file.
#[derive(Debug, PartialEq)]
enum Target {
    /// `fn NAME` in a Rust file, `def NAME` in a Python file.
    Function(String),
    /// A substring of a shell script, written in double quotes.
    Text(String),
}

/// One `FILE::NAME` reference.
#[derive(Debug, PartialEq)]
struct Reference {
    file: String,
    target: Target,
}

/// One numbered promise: `- **G<n>**` and its indented continuation lines.
#[derive(Debug)]
struct Promise {
    number: u32,
    /// Under "Promises without a test yet".
    untested: bool,
    /// The code spans of its text.
    spans: Vec<String>,
}

/// The code spans (`...`) of one line.
fn code_spans(line: &str) -> impl Iterator<Item = &str> {
    line.split('`').skip(1).step_by(2)
}

/// `span` read as a reference: `None` when it is not one (no `::`, or the
/// left side is not a `.rs`, `.py` or `.sh` path), `Err` with the reason
/// when it looks like one but is malformed.
fn reference(span: &str) -> Option<Result<Reference, String>> {
    let (file, name) = span.split_once("::")?;
    let path_chars = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let kind = [".rs", ".py", ".sh"]
        .into_iter()
        .find(|ext| file.ends_with(ext))?;
    if file.is_empty() || !file.chars().all(path_chars) {
        return None;
    }
    if file.starts_with('/') || file.split('/').any(|part| part == "..") {
        return Some(Err("the file must be a path inside the repository".into()));
    }
    let identifier = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let quoted = name
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .filter(|text| !text.is_empty());
    let target = match (kind, quoted) {
        (".sh", Some(text)) => Target::Text(text.to_string()),
        (".sh", None) => return Some(Err("a shell script is named by a quoted substring".into())),
        (_, None) if identifier(name) => Target::Function(name.to_string()),
        _ => {
            return Some(Err(
                "a Rust or Python file is named by a function name".into()
            ))
        }
    };
    Some(Ok(Reference {
        file: file.to_string(),
        target,
    }))
}

/// Whether `text` has `keyword NAME` as whole words (`fn a` is not in
/// `fn a_b`, nor in `nfn a`).
fn defines(text: &str, keyword: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let needle = format!("{keyword} {name}");
    text.match_indices(&needle).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// Why `reference` does not hold, `None` when it does.
fn missing(reference: &Reference, read: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let Some(text) = read(&reference.file) else {
        return Some("no such file".into());
    };
    match &reference.target {
        Target::Text(words) if !text.contains(words.as_str()) => {
            Some("the script has no such text".into())
        }
        Target::Function(name) if reference.file.ends_with(".rs") => {
            (!defines(&text, "fn", name)).then(|| format!("the file defines no `fn {name}`"))
        }
        Target::Function(name) => {
            (!defines(&text, "def", name)).then(|| format!("the file defines no `def {name}`"))
        }
        Target::Text(_) => None,
    }
}

/// The promises of `doc`, in order.
fn promises(doc: &str) -> Vec<Promise> {
    let mut found: Vec<Promise> = Vec::new();
    let mut untested = false;
    let mut open = false; // the last promise continues on indented lines
    for line in doc.lines() {
        if line.starts_with('#') {
            untested = line.trim_end() == UNTESTED;
            open = false;
            continue;
        }
        if let Some(rest) = line.strip_prefix("- **G") {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            found.push(Promise {
                // No number, or 0: reported below.
                number: digits.parse().unwrap_or(0),
                untested,
                spans: Vec::new(),
            });
            open = true;
        } else if !(open && line.starts_with(' ') && !line.trim().is_empty()) {
            open = false;
            continue;
        }
        if let Some(promise) = found.last_mut() {
            promise.spans.extend(code_spans(line).map(str::to_string));
        }
    }
    found
}

/// Every problem of the list `doc`, one line each, reading the files it
/// names with `read` (a path from the repository root).
fn problems(doc: &str, read: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut problems = Vec::new();
    for (at, line) in doc.lines().enumerate() {
        for span in code_spans(line) {
            let found = match reference(span) {
                None => continue,
                Some(Err(why)) => Some(why),
                Some(Ok(reference)) => missing(&reference, read),
            };
            if let Some(why) = found {
                problems.push(format!("line {}: `{span}`: {why}", at + 1));
            }
        }
    }
    let promises = promises(doc);
    if promises.is_empty() {
        problems.push("no promise (`- **G<n>**`) found".into());
    }
    let mut numbers = BTreeSet::new();
    for (at, promise) in promises.iter().enumerate() {
        if promise.number == 0 {
            problems.push(format!("promise {} has no number G1, G2, ...", at + 1));
        } else if !numbers.insert(promise.number) {
            problems.push(format!(
                "G{} is the number of two promises; give the later one the next unused number",
                promise.number
            ));
        }
        let tested = promise
            .spans
            .iter()
            .any(|span| matches!(reference(span), Some(Ok(_))));
        if !promise.untested && !tested {
            problems.push(format!(
                "G{} names no test; name one, or move it under \"{}\"",
                promise.number,
                UNTESTED.trim_start_matches('#').trim()
            ));
        }
    }
    problems
}

/// The real list holds: each test it names exists, and each promise outside
/// the last section names one. Fails listing every problem: with
/// `tests/it/backup.rs::a_backup_taken_under_load_restores_every_lock_with_fences_above_it`
/// misspelt in the list it named that line and "the file defines no `fn
/// ...`" (seen).
#[test]
fn every_test_docs_guarantees_names_exists() {
    let doc = read_repo_file(GUARANTEES).expect("docs/guarantees.md");
    let problems = problems(&doc, &read_repo_file);
    assert!(
        problems.is_empty(),
        "{GUARANTEES}:\n  {}",
        problems.join("\n  ")
    );
}

/// The README points its readers to the list. Fails with the README's
/// mentions of docs/guarantees.md misspelt (seen).
#[test]
fn the_readme_points_to_the_guarantees() {
    let readme = read_repo_file("README.md").expect("README.md");
    assert!(
        readme.contains(GUARANTEES),
        "README.md does not mention {GUARANTEES}"
    );
}

/// The checker itself, on a small list and made-up files: each broken
/// reference and each untested promise outside the last section is
/// reported, and nothing else. With `missing` answering `None` for every
/// reference (the check turned off), this test fails: the four references
/// to a test, a file or a check that is gone go unreported (seen).
#[test]
fn the_checker_reports_tests_that_are_gone() {
    let files = |path: &str| match path {
        "tests/it/a.rs" => Some("#[test]\nfn kept() {}\nfn gone_but_longer() {}\n".to_string()),
        "clients/python/tests/test_a.py" => Some("async def test_kept() -> None:\n".to_string()),
        "cluster-scripts/selftest.sh" => Some("check \"the node restarts\" true\n".to_string()),
        _ => None,
    };
    let doc = "\
# Guarantees

Written as `FILE::NAME`; `raftlock_client::Client` is code, not a reference.

## Locks

- **G1** Kept. (README)
  `tests/it/a.rs::kept`, `clients/python/tests/test_a.py::test_kept`,
  `cluster-scripts/selftest.sh::\"the node restarts\"`
- **G2** Renamed. (README)
  `tests/it/a.rs::gone`
- **G3** In Python. (README) `clients/python/tests/test_a.py::test_gone`
- **G4** In a script. `cluster-scripts/selftest.sh::\"the node stops\"`
- **G5** In a file that went. `tests/it/b.rs::kept`
- **G6** Badly written. `cluster-scripts/selftest.sh::restarts`
- **G7** Names nothing.

  `tests/it/a.rs::kept` (after a blank line: not part of G7)
- **G12** A later number: fine. `tests/it/a.rs::kept`
- **G2** Numbered twice. `tests/it/a.rs::kept`
- **Gx** No number. `tests/it/a.rs::kept`

## Promises without a test yet

- **G10** Not tested yet: a test would do this.
";
    let problems = problems(doc, &files);
    let expected = [
        "line 11: `tests/it/a.rs::gone`: the file defines no `fn gone`",
        "line 12: `clients/python/tests/test_a.py::test_gone`: the file defines no `def test_gone`",
        "line 13: `cluster-scripts/selftest.sh::\"the node stops\"`: the script has no such text",
        "line 14: `tests/it/b.rs::kept`: no such file",
        "line 15: `cluster-scripts/selftest.sh::restarts`: a shell script is named by a quoted substring",
        "G6 names no test; name one, or move it under \"Promises without a test yet\"",
        "G7 names no test; name one, or move it under \"Promises without a test yet\"",
        "G2 is the number of two promises; give the later one the next unused number",
        "promise 10 has no number G1, G2, ...",
    ];
    assert_eq!(problems, expected, "{problems:#?}");
}

/// `fn NAME` and `def NAME` match whole names only.
#[test]
fn a_test_name_matches_only_as_a_whole_word() {
    assert!(defines("fn kept() {}", "fn", "kept"));
    assert!(defines("async fn kept<T>()", "fn", "kept"));
    assert!(!defines("fn kept_longer() {}", "fn", "kept"));
    assert!(!defines("fn unkept() {}", "fn", "kept"));
    assert!(defines("async def test_a(x):", "def", "test_a"));
    assert!(!defines("undef test_a", "def", "test_a"));
}
