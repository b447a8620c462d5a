//! The supported-commands page of the user's guide (`docs/serve/commands.md`) stays true to the
//! server's command table: every command the server answers is named there and marked as
//! supported (`yes` or `partial`) in its row, and every command the page marks supported is one
//! the server has. Fails naming the commands that differ.

use std::collections::BTreeSet;

/// The command names a table row's first cell lists (`SET`, `BLPOP`, `CLIENT ID|GETNAME` ->
/// `CLIENT`), with the row's strata column.
fn rows(page: &str) -> Vec<(BTreeSet<String>, String)> {
    let mut out = Vec::new();
    for line in page.lines() {
        let line = line.replace("\\|", "/"); // an escaped pipe inside a cell
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | command | strata serve | redis-server | Kvrocks | note |
        if cells.len() < 4 || !cells[1].starts_with('`') {
            continue;
        }
        // Options sit in parentheses after their command (`SET` (`NX`, `XX`)): drop them.
        let mut depth = 0usize;
        let first: String = cells[1]
            .chars()
            .filter(|&c| {
                match c {
                    '(' => depth += 1,
                    ')' => depth = depth.saturating_sub(1),
                    _ => return depth == 0,
                }
                false
            })
            .collect();
        let mut names = BTreeSet::new();
        for part in first.split('`').skip(1).step_by(2) {
            let word: String = part
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                .collect();
            if !word.is_empty() && word.chars().any(|c| c.is_ascii_uppercase()) {
                names.insert(word.to_ascii_lowercase());
            }
        }
        out.push((names, cells[2].to_ascii_lowercase()));
    }
    out
}

#[test]
fn every_command_is_on_the_supported_commands_page() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/serve/commands.md");
    let page = std::fs::read_to_string(path).expect("docs/serve/commands.md");
    let rows = rows(&page);
    let supported: BTreeSet<String> = rows
        .iter()
        .filter(|(_, strata)| strata.starts_with("yes") || strata.starts_with("partial"))
        .flat_map(|(names, _)| names.iter().cloned())
        .collect();
    let server: BTreeSet<String> = strata_server::commands::all_commands()
        .map(|c| c.name.to_ascii_lowercase())
        .collect();
    let missing: Vec<_> = server.difference(&supported).collect();
    assert!(
        missing.is_empty(),
        "commands the server answers but docs/serve/commands.md does not mark yes/partial: {missing:?}"
    );
    let extra: Vec<_> = supported.difference(&server).collect();
    assert!(
        extra.is_empty(),
        "commands docs/serve/commands.md marks supported but the server does not have: {extra:?}"
    );
}
