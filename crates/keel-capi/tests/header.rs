//! `include/keel.h` is what cbindgen makes of the sources, and documents
//! every function it declares.

use std::path::Path;

fn generated() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).unwrap();
    let bindings = cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not read the crate");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn the_checked_in_header_is_what_the_sources_generate() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/keel.h");
    let fresh = generated();
    if std::env::var_os("KEEL_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "include/keel.h is stale: regenerate it with \
         `KEEL_BLESS=1 cargo test -p keel-capi --test header`"
    );
}

#[test]
fn every_function_in_the_header_is_documented() {
    let header = generated();
    let lines: Vec<&str> = header.lines().collect();
    let mut functions = 0;
    for (i, line) in lines.iter().enumerate() {
        // A declaration's first line: `<type> keel_name(` at the left margin.
        let Some(open) = line.find('(') else { continue };
        let is_decl = !line.starts_with([' ', '/', '#', '}'])
            && line[..open]
                .rsplit([' ', '*'])
                .next()
                .is_some_and(|n| n.starts_with("keel_"))
            && !line.starts_with("typedef");
        if !is_decl {
            continue;
        }
        functions += 1;
        let above = lines[..i]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap();
        assert!(above.starts_with("//"), "undocumented in keel.h: {line}");
    }
    // Every `#[no_mangle]` function of the crate is declared.
    let sources = ["status.rs", "mapper.rs", "result.rs", "pool.rs", "mpi.rs"]
        .iter()
        .map(|f| {
            let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(f);
            std::fs::read_to_string(p).unwrap()
        })
        .collect::<String>();
    assert_eq!(functions, sources.matches("#[no_mangle]").count());
    assert!(functions >= 20, "{functions} functions");
}
