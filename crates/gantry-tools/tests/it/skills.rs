//! Skills: SKILL.md parsing, discovery, per-thread sets, the `skill` tool,
//! and package installs from folders, archives over real HTTP and git.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{call, result_text};
use gantry_tools::skills::{
    Skill, SkillError, SkillSet, SkillSource, SkillTool, delete, discover, discover_dir, install,
};
use gantry_tools::{Tool, ToolStatus};
use gantry_types::ItemKind;
use serde_json::json;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/skills")
}

fn write_skill(dir: &Path, name: &str, description: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\nDo the {name} thing.\n"),
    )
    .unwrap();
}

fn err_text(e: &SkillError) -> String {
    let s = e.to_string();
    assert!(!s.contains('\n'), "error is not one line: {s:?}");
    s
}

// ---------------------------------------------------------------- parsing

#[test]
fn parses_string_allowed_tools_and_body() {
    let dir = fixtures().join("gh-review");
    let text = fs::read_to_string(dir.join("SKILL.md")).unwrap();
    let s = Skill::parse(&text, Some(&dir)).unwrap();
    assert_eq!(s.name, "gh-review");
    assert!(s.description.starts_with("Review a GitHub pull request"));
    // Commas and spaces separate rules, but not inside parentheses.
    assert_eq!(
        s.allowed_tools,
        ["Bash(gh pr view:*)", "Bash(gh:*)", "Read"]
    );
    assert!(!s.disable_model_invocation);
    assert!(s.body.starts_with("# Reviewing a pull request"));
    assert!(s.body.ends_with("most important first."));
    assert_eq!(s.dir.as_deref(), Some(dir.as_path()));
    assert_eq!(s.files(), ["reference.md", "scripts/summarize.sh"]);
}

#[test]
fn parses_list_allowed_tools_folded_description_and_ignores_other_fields() {
    let dir = fixtures().join("pdf-forms");
    let s = Skill::from_dir(&dir, SkillSource::User).unwrap();
    assert_eq!(s.name, "pdf-forms");
    assert_eq!(s.source, SkillSource::User);
    assert_eq!(
        s.description,
        "Fill in PDF forms. Use when the user gives a PDF form and the values to put in it."
    );
    assert_eq!(s.allowed_tools, ["Read", "Bash(python3 scripts/fill.py:*)"]);
}

#[test]
fn parses_disable_model_invocation_inline_and_crlf() {
    let text = "---\r\nname: deploy\r\ndescription: Ship it.\r\ndisable-model-invocation: true\r\n---\r\nRun it.\r\n";
    let s = Skill::parse(text, None).unwrap();
    assert!(s.disable_model_invocation);
    assert!(!s.model_invocable());
    assert_eq!(s.source, SkillSource::Inline);
    assert_eq!(s.body, "Run it.");
    assert!(s.allowed_tools.is_empty());
    assert!(s.files().is_empty());
}

#[test]
fn missing_description_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("no-desc");
    fs::create_dir_all(&skill).unwrap();
    fs::write(skill.join("SKILL.md"), "---\nname: no-desc\n---\nbody\n").unwrap();
    let e = Skill::from_dir(&skill, SkillSource::Workspace).unwrap_err();
    let msg = err_text(&e);
    assert!(
        msg.contains(&skill.join("SKILL.md").display().to_string()),
        "{msg}"
    );
    assert!(msg.contains("missing `description`"), "{msg}");
}

#[test]
fn missing_name_falls_back_to_the_folder_but_not_inline() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("from-folder");
    fs::create_dir_all(&skill).unwrap();
    let text = "---\ndescription: d\n---\nbody\n";
    assert_eq!(
        Skill::parse(text, Some(&skill)).unwrap().name,
        "from-folder"
    );
    let e = Skill::parse(text, None).unwrap_err();
    assert_eq!(
        err_text(&e),
        "inline skill: missing `name` in the front matter"
    );
}

#[test]
fn bad_names_front_matter_and_yaml_are_clear_errors() {
    let e = Skill::parse("---\nname: My Skill\ndescription: d\n---\n", None).unwrap_err();
    let msg = err_text(&e);
    assert!(msg.contains("invalid skill name `My Skill`"), "{msg}");
    assert!(
        msg.contains("lowercase letters, digits and hyphens"),
        "{msg}"
    );

    let long = "a".repeat(65);
    let e = Skill::parse(&format!("---\nname: {long}\ndescription: d\n---\n"), None).unwrap_err();
    assert!(err_text(&e).contains("longer than 64"));

    let e = Skill::parse("# Just markdown\n", None).unwrap_err();
    assert!(err_text(&e).contains("no YAML front matter"));

    let e = Skill::parse("---\nname: x\ndescription: d\n", None).unwrap_err();
    assert!(
        err_text(&e).contains("no YAML front matter"),
        "unclosed block"
    );

    let e = Skill::parse("---\nname: [x\ndescription: d\n---\n", None).unwrap_err();
    let msg = err_text(&e);
    assert!(
        msg.contains("invalid front matter") && msg.contains("line 1"),
        "{msg}"
    );

    let e = Skill::parse(
        "---\nname: x\ndescription: d\nallowed-tools: 3\n---\n",
        None,
    )
    .unwrap_err();
    assert!(err_text(&e).contains("`allowed-tools` must be a list of rules or one string"));
}

// -------------------------------------------------------------- discovery

#[test]
fn discovery_precedence_and_broken_skills() {
    let ws = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    let gantry = ws.path().join(".gantry/skills");
    let claude = ws.path().join(".claude/skills");
    let user = config.path().join("gantry/skills");

    write_skill(&gantry.join("shared"), "shared", "from the workspace");
    write_skill(&claude.join("shared"), "shared", "from .claude");
    write_skill(&user.join("shared"), "shared", "from the user");
    write_skill(&claude.join("claude-only"), "claude-only", "c");
    write_skill(&claude.join("also-shared"), "also-shared", "from .claude");
    write_skill(&user.join("also-shared"), "also-shared", "from the user");
    write_skill(&user.join("user-only"), "user-only", "u");
    // Broken: reported, not fatal.
    fs::create_dir_all(user.join("broken")).unwrap();
    fs::write(user.join("broken/SKILL.md"), "---\nname: broken\n---\n").unwrap();
    // Not skills: a folder without SKILL.md, a loose file, a hidden folder.
    fs::create_dir_all(gantry.join("notes")).unwrap();
    fs::write(gantry.join("README.md"), "hi").unwrap();
    write_skill(&gantry.join(".install-x"), "hidden", "staging");
    // Two folders with one name in the same place.
    write_skill(&claude.join("zz-dup"), "claude-only", "dup");

    let (skills, errors) = discover(ws.path(), Some(config.path()));
    let got: Vec<(&str, &str, SkillSource)> = skills
        .iter()
        .map(|s| (s.name.as_str(), s.description.as_str(), s.source))
        .collect();
    assert_eq!(
        got,
        [
            ("also-shared", "from .claude", SkillSource::Claude),
            ("claude-only", "c", SkillSource::Claude),
            ("shared", "from the workspace", SkillSource::Workspace),
            ("user-only", "u", SkillSource::User),
        ]
    );
    assert_eq!(errors.len(), 2, "{errors:?}");
    let msgs: Vec<String> = errors.iter().map(err_text).collect();
    assert!(
        msgs.iter()
            .any(|m| m.contains("zz-dup") && m.contains("already used")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m.contains("broken/SKILL.md") && m.contains("missing `description`")),
        "{msgs:?}"
    );

    // No folders at all: nothing, no errors.
    let empty = tempfile::tempdir().unwrap();
    let (skills, errors) = discover(empty.path(), None);
    assert!(skills.is_empty() && errors.is_empty());
}

/// The model writes the workspace: a `SKILL.md`, or a whole skill folder,
/// linked to somewhere else (another thread's workspace, a user's notes)
/// is not read by the daemon for it, nor is a FIFO waited on; a link that
/// stays inside the workspace still works.
#[test]
fn workspace_skills_are_read_beneath_the_workspace() {
    let ws = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let skills = ws.path().join(".gantry/skills");
    // Somewhere else: text shaped as a skill, whose body must not leak.
    write_skill(&elsewhere.path().join("notes"), "notes", "private");
    fs::write(
        elsewhere.path().join("notes/SKILL.md"),
        "---\nname: leak\ndescription: d\n---\nTHE OTHER TENANT'S SECRET\n",
    )
    .unwrap();
    fs::create_dir_all(skills.join("leak")).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.path().join("notes/SKILL.md"),
        skills.join("leak/SKILL.md"),
    )
    .unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("notes"), skills.join("folder")).unwrap();
    // A FIFO: never waited on.
    fs::create_dir_all(skills.join("fifo")).unwrap();
    let made = Command::new("mkfifo")
        .arg(skills.join("fifo/SKILL.md"))
        .status()
        .unwrap();
    assert!(made.success());
    // Inside the workspace, through a link: fine.
    write_skill(&ws.path().join("shared/inner"), "inner", "kept");
    std::os::unix::fs::symlink("../../shared/inner", skills.join("inner")).unwrap();

    let (found, errors) = discover(ws.path(), None);
    let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["inner"], "{errors:?}");
    assert!(
        found.iter().all(|s| !s.body.contains("SECRET")),
        "no text from outside the workspace"
    );
    let msgs: Vec<String> = errors.iter().map(err_text).collect();
    assert!(
        msgs.iter().all(|m| !m.contains("SECRET")),
        "nor in an error: {msgs:?}"
    );
    for linked in ["leak/SKILL.md", "folder/SKILL.md"] {
        assert!(
            msgs.iter()
                .any(|m| m.contains(linked) && m.contains("links out of the workspace")),
            "{linked} is reported: {msgs:?}"
        );
    }
}

// ---------------------------------------------------------------- SkillSet

/// The fixtures as the skills of a workspace the operator trusts (their
/// `allowed-tools` apply; see the trust tests below for one not trusted).
fn fixture_set() -> SkillSet {
    let (skills, errors) = discover_dir(&fixtures(), SkillSource::Workspace);
    assert!(errors.is_empty(), "{errors:?}");
    let mut set = SkillSet::new(skills);
    set.set_workspace(fixtures(), true);
    set
}

#[test]
fn skill_set_load_unload_list_and_catalog() {
    let mut set = fixture_set();
    assert_eq!(set.names(), ["deploy", "gh-review", "pdf-forms"]);
    assert_eq!(set.available_names(), ["gh-review", "pdf-forms"]);

    let catalog = set.catalog_prompt();
    assert!(catalog.contains("`skill` tool"), "{catalog}");
    assert!(
        catalog.contains("- gh-review: Review a GitHub pull request"),
        "{catalog}"
    );
    assert!(
        catalog.contains("- pdf-forms: Fill in PDF forms. Use when the user gives"),
        "{catalog}"
    );
    assert!(
        !catalog.contains("deploy"),
        "disable-model-invocation stays out: {catalog}"
    );

    // A user may load a disable-model-invocation skill.
    assert_eq!(set.load("deploy").unwrap().name, "deploy");
    set.load("gh-review").unwrap();
    assert_eq!(
        set.active_allowed_tools(),
        [
            "Bash(./deploy.sh:*)",
            "Bash(gh pr view:*)",
            "Bash(gh:*)",
            "Read"
        ]
    );
    let listed: Vec<(String, bool, bool)> = set
        .list()
        .into_iter()
        .map(|l| (l.name, l.loaded, l.model_invocable))
        .collect();
    assert_eq!(
        listed,
        [
            ("deploy".to_string(), true, false),
            ("gh-review".to_string(), true, true),
            ("pdf-forms".to_string(), false, true),
        ]
    );

    assert!(set.unload("deploy").unwrap());
    assert!(!set.unload("deploy").unwrap(), "already unloaded");
    assert_eq!(
        set.active_allowed_tools(),
        ["Bash(gh pr view:*)", "Bash(gh:*)", "Read"]
    );

    let e = set.load("nope").unwrap_err();
    assert_eq!(
        err_text(&e),
        "unknown skill `nope`; available skills: deploy, gh-review, pdf-forms"
    );
    assert!(set.unload("nope").is_err());

    assert_eq!(SkillSet::default().catalog_prompt(), "");
}

#[test]
fn inline_skills_load_shadow_and_unload() {
    let mut set = fixture_set();
    let inline = "---\nname: scratch\ndescription: A one-off.\n---\nBe brief.\n";
    let s = set.load_inline(inline).unwrap();
    assert_eq!(
        (s.name.as_str(), s.source),
        ("scratch", SkillSource::Inline)
    );
    assert!(set.is_loaded("scratch"));
    assert!(set.catalog_prompt().contains("- scratch: A one-off."));
    assert!(set.unload("scratch").unwrap());
    assert!(
        set.get("scratch").is_none(),
        "an unloaded inline skill is gone"
    );

    // An inline skill replaces a discovered one until it is unloaded.
    set.load_inline("---\nname: pdf-forms\ndescription: Inline override.\n---\nx\n")
        .unwrap();
    assert_eq!(
        set.get("pdf-forms").unwrap().description,
        "Inline override."
    );
    set.unload("pdf-forms").unwrap();
    let back = set.get("pdf-forms").unwrap();
    assert_eq!(back.source, SkillSource::Workspace);
    assert!(!set.is_loaded("pdf-forms"));

    let e = set
        .load_inline("---\nname: Bad Name\ndescription: d\n---\n")
        .unwrap_err();
    assert!(err_text(&e).starts_with("inline skill: invalid skill name"));
}

// ------------------------------------------------------------ skill tool

#[tokio::test]
async fn skill_tool_returns_instructions_and_refuses_what_it_must() {
    let shared = std::sync::Arc::new(std::sync::RwLock::new(fixture_set()));
    let tool = SkillTool::new(shared.clone());
    let ws = tempfile::tempdir().unwrap();

    let spec = tool.spec();
    assert_eq!(spec.name, "skill");
    assert!(
        spec.description.contains("- gh-review: Review"),
        "{}",
        spec.description
    );
    assert!(!spec.description.contains("deploy"));

    let args = json!({"name": "gh-review"});
    let start = tool.start_item(&args, &common::ctx(ws.path()));
    assert!(matches!(start, ItemKind::ToolCall { ref name, result: None, .. } if name == "skill"));
    let out = call(&tool, ws.path(), args.clone()).await;
    assert_eq!(out.status, ToolStatus::Ok, "{}", out.model_output);
    let text = result_text(&out);
    assert!(text.contains("# Reviewing a pull request"), "{text}");
    assert!(text.contains("Base directory for this skill:"), "{text}");
    assert!(
        text.contains("- reference.md\n- scripts/summarize.sh\n"),
        "{text}"
    );
    assert!(text.contains("Bash(gh:*)"), "{text}");
    assert_eq!(SkillTool::invoked_skill(&args), Some("gh-review"));
    // Invoking loaded it, so its rules are active.
    assert!(shared.read().unwrap().is_loaded("gh-review"));
    assert!(
        shared
            .read()
            .unwrap()
            .active_allowed_tools()
            .contains(&"Bash(gh:*)".to_string())
    );

    let out = call(&tool, ws.path(), json!({"name": "deploy"})).await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("disable-model-invocation"),
        "{}",
        out.model_output
    );
    assert!(
        out.model_output
            .contains("available skills: gh-review, pdf-forms"),
        "{}",
        out.model_output
    );
    assert!(!shared.read().unwrap().is_loaded("deploy"));
    assert!(matches!(
        out.item,
        ItemKind::ToolCall { error: Some(_), .. }
    ));

    let out = call(&tool, ws.path(), json!({"name": "nope"})).await;
    assert_eq!(out.status, ToolStatus::Error);
    assert_eq!(
        out.model_output,
        "skill: unknown skill `nope`; available skills: gh-review, pdf-forms"
    );

    let out = call(&tool, ws.path(), json!({"skill": "gh-review"})).await;
    assert_eq!(out.status, ToolStatus::Error);
    assert!(
        out.model_output.contains("invalid arguments for skill"),
        "{}",
        out.model_output
    );

    // Inline skills have no folder and no file list.
    shared
        .write()
        .unwrap()
        .load_inline("---\nname: scratch\ndescription: d\n---\nInline body.\n")
        .unwrap();
    let out = call(&tool, ws.path(), json!({"name": "scratch"})).await;
    let text = result_text(&out);
    assert!(text.contains("Inline body."));
    assert!(!text.contains("Base directory") && !text.contains("Files in this skill"));
}

// ------------------------------------------------------- workspace trust

const BASH_SKILL: &str =
    "---\nname: NAME\ndescription: Runs things.\nallowed-tools: Bash\n---\nRun what you need.\n";

fn write_bash_skill(dir: &Path, name: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("SKILL.md"), BASH_SKILL.replace("NAME", name)).unwrap();
}

/// A workspace with a `.gantry/skills` and a `.claude/skills` skill, and a
/// config home (outside it) with a user skill, each allowing `Bash`.
fn workspace_and_user_skills() -> (tempfile::TempDir, PathBuf, SkillSet) {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    let home = root.path().join("config");
    write_bash_skill(&ws.join(".gantry/skills/ws-helper"), "ws-helper");
    write_bash_skill(&ws.join(".claude/skills/claude-helper"), "claude-helper");
    write_bash_skill(&home.join("gantry/skills/user-helper"), "user-helper");
    let (skills, errors) = discover(&ws, Some(&home));
    assert!(errors.is_empty(), "{errors:?}");
    let mut set = SkillSet::new(skills);
    for name in ["ws-helper", "claude-helper", "user-helper"] {
        set.load(name).unwrap();
    }
    (root, ws, set)
}

fn granted(set: &SkillSet) -> Vec<(String, bool)> {
    set.list()
        .into_iter()
        .map(|l| (l.name, l.allowed_tools_granted))
        .collect()
}

#[test]
fn workspace_skills_grant_no_rights_unless_the_operator_trusts_the_workspace() {
    let (_root, ws, mut set) = workspace_and_user_skills();
    set.set_workspace(ws.clone(), false);
    assert_eq!(
        granted(&set),
        [
            ("claude-helper".to_owned(), false),
            ("user-helper".to_owned(), true),
            ("ws-helper".to_owned(), false),
        ]
    );
    // Only the user's skill's rule: the workspace ones are ignored. Here
    // `Bash` comes from the user's skill alone; unload it and none is left.
    assert_eq!(set.active_allowed_tools(), ["Bash"]);
    set.unload("user-helper").unwrap();
    assert!(
        set.active_allowed_tools().is_empty(),
        "{:?}",
        set.active_allowed_tools()
    );

    // Trusted by the operator: the workspace's skills grant theirs.
    set.set_workspace(ws, true);
    assert_eq!(set.active_allowed_tools(), ["Bash"]);
    assert!(granted(&set).iter().all(|(_, g)| *g));
}

#[test]
fn a_set_never_told_its_workspace_grants_nothing_to_workspace_skills() {
    let (_root, _ws, mut set) = workspace_and_user_skills();
    set.unload("user-helper").unwrap();
    assert!(set.active_allowed_tools().is_empty());
    // An inline skill (a client's) still grants its rules.
    set.load_inline("---\nname: inline\ndescription: d\nallowed-tools: Read\n---\nx\n")
        .unwrap();
    assert_eq!(set.active_allowed_tools(), ["Read"]);
}

#[test]
fn a_user_or_installed_skill_inside_the_workspace_counts_as_a_workspace_skill() {
    // The workspace is the home dir: the user's skills dir is in it, so the
    // model could have written it.
    let home = tempfile::tempdir().unwrap();
    let ws = home.path().to_path_buf();
    write_bash_skill(&ws.join(".config/gantry/skills/user-helper"), "user-helper");
    let (skills, _) = discover(&ws, Some(&ws.join(".config")));
    let mut set = SkillSet::new(skills);
    set.set_workspace(ws.clone(), false);
    set.load("user-helper").unwrap();
    assert!(set.active_allowed_tools().is_empty());

    // An installed skill linked in from the workspace: its real folder is
    // there, so it is judged there.
    let outside = tempfile::tempdir().unwrap();
    let installed = outside.path().join("agents/a1/skills");
    fs::create_dir_all(&installed).unwrap();
    write_bash_skill(&ws.join("linked"), "linked");
    std::os::unix::fs::symlink(ws.join("linked"), installed.join("linked")).unwrap();
    let (found, errors) = discover_dir(&installed, SkillSource::Installed);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        found[0].dir.as_deref(),
        Some(fs::canonicalize(ws.join("linked")).unwrap().as_path())
    );
    set.sync_source(SkillSource::Installed, found);
    set.load("linked").unwrap();
    assert!(set.active_allowed_tools().is_empty());
    set.set_workspace(ws, true);
    assert_eq!(set.active_allowed_tools(), ["Bash"]);
}

#[tokio::test]
async fn the_skill_tool_tells_the_model_when_allowed_tools_are_ignored() {
    let (_root, ws, mut set) = workspace_and_user_skills();
    set.set_workspace(ws.clone(), false);
    set.unload("ws-helper").unwrap();
    let shared = std::sync::Arc::new(std::sync::RwLock::new(set));
    let tool = SkillTool::new(shared.clone());

    let text = result_text(&call(&tool, &ws, json!({"name": "ws-helper"})).await);
    assert!(text.contains("Run what you need."), "{text}");
    assert!(
        text.contains(
            "allowed-tools of workspace skill `ws-helper` ignored (Bash): workspace not trusted \
             by the operator; these tools follow the thread's permission rules"
        ),
        "{text}"
    );
    assert!(!text.contains("Allowed without asking"), "{text}");
    assert!(shared.read().unwrap().is_loaded("ws-helper"));

    let text = result_text(&call(&tool, &ws, json!({"name": "user-helper"})).await);
    assert!(
        text.contains("Allowed without asking while it is active: Bash"),
        "{text}"
    );
}

// ---------------------------------------------------------------- install

#[tokio::test]
async fn install_from_local_folders_replace_and_delete() {
    let skills_dir = tempfile::tempdir().unwrap();
    let dir = skills_dir.path().join("agent-1/skills");

    // One skill folder.
    let names = install(fixtures().join("gh-review").to_str().unwrap(), &dir)
        .await
        .unwrap();
    assert_eq!(names, ["gh-review"]);
    assert!(dir.join("gh-review/scripts/summarize.sh").is_file());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir.join("gh-review/scripts/summarize.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert!(mode & 0o100 != 0, "scripts stay executable");
    }

    // A folder of skills; gh-review is replaced, not duplicated.
    let names = install(fixtures().to_str().unwrap(), &dir).await.unwrap();
    assert_eq!(names, ["deploy", "gh-review", "pdf-forms"]);
    let (found, errors) = discover_dir(&dir, SkillSource::Installed);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(found.len(), 3);
    // No staging left behind.
    let leftovers: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    delete("deploy", &dir).await.unwrap();
    assert!(!dir.join("deploy").exists());
    let e = delete("deploy", &dir).await.unwrap_err();
    assert!(err_text(&e).contains("skill `deploy` is not installed in"));
    let e = delete("../agent-1", &dir).await.unwrap_err();
    assert!(matches!(e, SkillError::NotInstalled { .. }));
    assert!(dir.exists());
}

#[tokio::test]
async fn install_refuses_invalid_packages_and_leaves_nothing() {
    let src = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();

    // A folder with no SKILL.md anywhere.
    fs::write(src.path().join("README.md"), "hi").unwrap();
    let e = install(src.path().to_str().unwrap(), dir.path())
        .await
        .unwrap_err();
    let msg = err_text(&e);
    assert!(
        msg.contains("is not a valid skill package: no SKILL.md found"),
        "{msg}"
    );

    // One good skill and one broken one: neither lands.
    write_skill(&src.path().join("good"), "good", "fine");
    fs::create_dir_all(src.path().join("bad")).unwrap();
    fs::write(
        src.path().join("bad/SKILL.md"),
        "---\nname: BAD\ndescription: d\n---\n",
    )
    .unwrap();
    let e = install(src.path().to_str().unwrap(), dir.path())
        .await
        .unwrap_err();
    assert!(err_text(&e).contains("invalid skill name `BAD`"));
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing landed"
    );

    // A symlink out of the skill is refused.
    #[cfg(unix)]
    {
        let secret = tempfile::tempdir().unwrap();
        fs::write(secret.path().join("key"), "secret").unwrap();
        let pkg = tempfile::tempdir().unwrap();
        write_skill(pkg.path(), "leaky", "d");
        std::os::unix::fs::symlink(secret.path().join("key"), pkg.path().join("key")).unwrap();
        let e = install(pkg.path().to_str().unwrap(), dir.path())
            .await
            .unwrap_err();
        assert!(err_text(&e).contains("points outside its skill folder"));
        assert!(!dir.path().join("leaky").exists());
    }
}

#[tokio::test]
async fn unresolvable_coordinates_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("no-such-skill-package-xyz", "not an existing local path"),
        ("ftp://example.com/s.zip", "unsupported scheme `ftp://`"),
        ("   ", "the coordinate is empty"),
    ];
    for (coordinate, want) in cases {
        let e = install(coordinate, dir.path()).await.unwrap_err();
        let msg = err_text(&e);
        assert!(matches!(e, SkillError::Unresolvable { .. }), "{msg}");
        assert!(msg.starts_with("cannot resolve skill package"), "{msg}");
        assert!(msg.contains(want), "{coordinate}: {msg}");
    }
    // A plain file that is not an archive.
    let f = dir.path().join("notes.txt");
    fs::write(&f, "x").unwrap();
    let e = install(f.to_str().unwrap(), &dir.path().join("skills"))
        .await
        .unwrap_err();
    assert!(err_text(&e).contains("not a .tar.gz, .tgz or .zip archive"));
}

// -------------------------------------------------- archives over HTTP

/// Serves fixed bodies by path on 127.0.0.1; anything else is a 404.
fn serve(files: BTreeMap<String, Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&req);
            let target = head.split_whitespace().nth(1).unwrap_or("/");
            let path = target.split('?').next().unwrap_or(target).to_string();
            let (status, body) = match files.get(&path) {
                Some(b) => ("200 OK", b.clone()),
                None => ("404 Not Found", b"not found".to_vec()),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
        }
    });
    format!("http://{addr}")
}

/// A .tar.gz of `src` under `prefix/` (as GitHub's tarballs have a top folder).
fn tar_gz_of(src: &Path, prefix: &str) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    b.append_dir_all(prefix, src).unwrap();
    b.into_inner().unwrap().finish().unwrap()
}

/// A .zip of `src` under `prefix/`.
fn zip_of(src: &Path, prefix: &str) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o755);
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf)>) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            let name = format!("{rel}/{}", p.file_name().unwrap().to_string_lossy());
            if p.is_dir() {
                walk(&p, &name, out);
            } else {
                out.push((name, p));
            }
        }
    }
    let mut files = Vec::new();
    walk(src, prefix, &mut files);
    for (name, path) in files {
        w.start_file(name, opts).unwrap();
        w.write_all(&fs::read(path).unwrap()).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// A .tar.gz with one raw entry whose name (or link target) is not checked
/// by the tar crate's safe setters, like a hostile archive would have.
fn hostile_tar_gz(name: &str, link: Option<&str>) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    let mut ok = tar::Header::new_gnu();
    ok.set_path("pkg/SKILL.md").unwrap();
    let body = b"---\nname: pkg\ndescription: d\n---\n";
    ok.set_size(body.len() as u64);
    ok.set_mode(0o644);
    ok.set_cksum();
    b.append(&ok, &body[..]).unwrap();

    let mut h = tar::Header::new_gnu();
    let raw = &mut h.as_old_mut().name;
    raw[..name.len()].copy_from_slice(name.as_bytes());
    h.set_mode(0o644);
    match link {
        Some(target) => {
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_link_name_literal(target).unwrap();
            h.set_size(0);
            h.set_cksum();
            b.append(&h, &[][..]).unwrap();
        }
        None => {
            h.set_size(5);
            h.set_cksum();
            b.append(&h, &b"owned"[..]).unwrap();
        }
    }
    b.into_inner().unwrap().finish().unwrap()
}

#[tokio::test]
async fn install_archives_over_http() {
    let mut files = BTreeMap::new();
    files.insert(
        "/pkg.tar.gz".to_string(),
        tar_gz_of(&fixtures(), "skills-main"),
    );
    files.insert(
        "/one.tgz".to_string(),
        tar_gz_of(&fixtures().join("pdf-forms"), "pdf-forms"),
    );
    files.insert("/pkg.zip".to_string(), zip_of(&fixtures(), "skills-main"));
    files.insert(
        "/evil.tar.gz".to_string(),
        hostile_tar_gz("../escaped.txt", None),
    );
    files.insert(
        "/abs.tar.gz".to_string(),
        hostile_tar_gz("/tmp/abs.txt", None),
    );
    files.insert(
        "/link.tar.gz".to_string(),
        hostile_tar_gz("pkg/link", Some("../../..")),
    );
    files.insert("/garbage.zip".to_string(), b"this is not a zip".to_vec());
    let mut evil_zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default();
    evil_zip.start_file("pkg/SKILL.md", opts).unwrap();
    evil_zip
        .write_all(b"---\nname: pkg\ndescription: d\n---\n")
        .unwrap();
    evil_zip.start_file("pkg/../../escaped.txt", opts).unwrap();
    evil_zip.write_all(b"owned").unwrap();
    files.insert(
        "/evil.zip".to_string(),
        evil_zip.finish().unwrap().into_inner(),
    );
    let base = serve(files);

    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("skills");

    let names = install(&format!("{base}/pkg.tar.gz"), &dir).await.unwrap();
    assert_eq!(names, ["deploy", "gh-review", "pdf-forms"]);
    assert!(dir.join("gh-review/reference.md").is_file());
    fs::remove_dir_all(&dir).unwrap();

    let names = install(&format!("{base}/one.tgz?download=1"), &dir)
        .await
        .unwrap();
    assert_eq!(names, ["pdf-forms"]);
    fs::remove_dir_all(&dir).unwrap();

    // A local archive file works the same way.
    let local = root.path().join("local.tgz");
    fs::write(&local, tar_gz_of(&fixtures().join("deploy"), "deploy")).unwrap();
    assert_eq!(
        install(local.to_str().unwrap(), &dir).await.unwrap(),
        ["deploy"]
    );
    fs::remove_dir_all(&dir).unwrap();

    let names = install(&format!("{base}/pkg.zip"), &dir).await.unwrap();
    assert_eq!(names, ["deploy", "gh-review", "pdf-forms"]);
    let (skills, errors) = discover_dir(&dir, SkillSource::Installed);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(skills.len(), 3);
    fs::remove_dir_all(&dir).unwrap();

    for (path, want) in [
        ("/evil.tar.gz", "entry `../escaped.txt` contains `..`"),
        ("/evil.zip", "entry `pkg/../../escaped.txt` contains `..`"),
        ("/abs.tar.gz", "entry `/tmp/abs.txt` has an absolute path"),
        ("/link.tar.gz", "is a symlink to `../../..`"),
    ] {
        let e = install(&format!("{base}{path}"), &dir).await.unwrap_err();
        let msg = err_text(&e);
        assert!(matches!(e, SkillError::UnsafeArchive { .. }), "{msg}");
        assert!(msg.contains(want), "{path}: {msg}");
        assert!(!root.path().join("escaped.txt").exists());
        assert!(
            !dir.join("pkg").exists(),
            "nothing lands from a refused archive"
        );
    }

    let garbage = format!("{base}/garbage.zip");
    let e = install(&garbage, &dir).await.unwrap_err();
    let msg = err_text(&e);
    assert!(
        msg.starts_with(&format!(
            "`{garbage}` is not a valid skill package: not a readable .zip"
        )),
        "{msg}"
    );

    let e = install(&format!("{base}/missing.tar.gz"), &dir)
        .await
        .unwrap_err();
    assert_eq!(
        err_text(&e),
        format!("cannot download skill package {base}/missing.tar.gz: HTTP 404 Not Found")
    );
}

// -------------------------------------------------------------------- git

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn install_from_a_git_repository() {
    let repo = tempfile::tempdir().unwrap();
    write_skill(
        &repo.path().join("skills/git-skill"),
        "git-skill",
        "From git.",
    );
    fs::write(repo.path().join("README.md"), "a skills repo").unwrap();
    git(repo.path(), &["init", "-q", "-b", "main"]);
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-q", "-m", "skill"]);

    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", repo.path().display());
    let names = install(&url, dir.path()).await.unwrap();
    assert_eq!(names, ["git-skill"]);
    let s = Skill::from_dir(&dir.path().join("git-skill"), SkillSource::Installed).unwrap();
    assert_eq!(s.description, "From git.");
    assert!(!dir.path().join("git-skill/.git").exists());

    // The repository's path works too (copied as a local folder, .git left out).
    let again = tempfile::tempdir().unwrap();
    let names = install(repo.path().to_str().unwrap(), again.path())
        .await
        .unwrap();
    assert_eq!(names, ["git-skill"]);

    let missing = format!("file://{}/no-such-repo", repo.path().display());
    let e = install(&missing, dir.path()).await.unwrap_err();
    let msg = err_text(&e);
    assert!(
        msg.starts_with(&format!("cannot clone skill package {missing}: ")),
        "{msg}"
    );
    assert!(msg.contains("fatal:"), "{msg}");
}
