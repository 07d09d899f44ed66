"""pyproject.toml + flags -> Settings: nearest config per file, precedence, selection semantics."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchfix_codemods.catalog import resolve_selection
from torchfix_codemods.configuration import Configuration
from torchfix_codemods.rules.registry import all_rules
from torchfix_codemods.settings import ConfigError, Overrides, Settings


def load_settings(paths: list[str], overrides: Overrides, cwd: str) -> Settings:
    """The settings in force for the first path (what a run over it uses for that path)."""
    return Configuration(overrides, cwd).settings_for(paths[0])


def test_nearest_pyproject_with_our_section_is_used(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchfix-codemods]\nselect = ["TFC001"]\n')
    nested = tmp_path / "pkg" / "sub"
    nested.mkdir(parents=True)
    # A nearer pyproject.toml without our section does not count.
    (tmp_path / "pkg" / "pyproject.toml").write_text('[tool.ruff]\nline-length = 99\n')
    settings = load_settings([str(nested)], Overrides(), cwd=str(tmp_path))
    assert settings.enabled == frozenset({"TFC000", "TFC001"})
    assert settings.config_path == str(tmp_path / "pyproject.toml")


def test_each_file_gets_its_nearest_configuration_whatever_the_path_order(
        tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchfix-codemods]\nselect = ["TFC001"]\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text(
        '[tool.torchfix-codemods]\nselect = ["TFC002"]\ntarget-torch = "2.4"\n')
    for order in ([tmp_path / "sub", tmp_path], [tmp_path, tmp_path / "sub"]):
        configuration = Configuration(Overrides(), cwd=str(order[0]))
        top = configuration.settings_for(str(tmp_path / "a.py"))
        sub = configuration.settings_for(str(tmp_path / "sub" / "b.py"))
        assert top.enabled == frozenset({"TFC000", "TFC001"}) and top.target_torch is None
        assert sub.enabled == frozenset({"TFC000", "TFC002"}) and sub.target_torch == (2, 4)
        assert sub.root == str(tmp_path / "sub")


def test_flags_apply_over_every_files_configuration(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchfix-codemods]\nselect = ["TFC001"]\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text(
        '[tool.torchfix-codemods]\nselect = ["TFC002"]\n')
    configuration = Configuration(Overrides(select=("TFC003",), unsafe_fixes=True),
                                  cwd=str(tmp_path))
    for path in (tmp_path / "a.py", tmp_path / "sub" / "b.py"):
        settings = configuration.settings_for(str(path))
        assert settings.enabled == frozenset({"TFC000", "TFC003"}) and settings.unsafe_fixes


def test_config_flag_puts_one_file_in_force_for_every_path(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text(
        '[tool.torchfix-codemods]\nselect = ["TFC002"]\n')
    (tmp_path / "ci.toml").write_text('[tool.torchfix-codemods]\nselect = ["TFC001"]\n')
    configuration = Configuration(Overrides(config=str(tmp_path / "ci.toml")), cwd=str(tmp_path))
    assert configuration.settings_for(str(tmp_path / "sub" / "b.py")).enabled == {"TFC000", "TFC001"}


def test_config_flag_without_our_table_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nline-length = 99\n')
    with pytest.raises(ConfigError, match=r"^--config: .*pyproject.toml has no "
                       r"\[tool.torchfix-codemods\] table$"):
        Configuration(Overrides(config=str(tmp_path / "pyproject.toml")), cwd=str(tmp_path))


def test_run_wide_options_come_from_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchfix-codemods]\nformat = "json"\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text('[tool.torchfix-codemods]\nformat = "sarif"\n')
    assert Configuration(Overrides(), cwd=str(tmp_path)).output_format == "json"
    assert Configuration(Overrides(), cwd=str(tmp_path / "sub")).output_format == "sarif"


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchfix-codemods]\nselect = ["TFC001"]\ntarget-torch = "2.4"\n'
        'unsafe-fixes = true\nformat = "json"\n')
    settings = load_settings([str(tmp_path)], Overrides(
        select=("TFC002",), target_torch="2.6", unsafe_fixes=False, output_format="text"),
        cwd=str(tmp_path))
    assert settings.enabled == frozenset({"TFC000", "TFC002"})
    assert settings.target_torch == (2, 6)
    assert settings.unsafe_fixes is False
    assert settings.output_format == "text"


def test_ignore_and_extend_select_combine_from_file_and_flags(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchfix-codemods]\nignore = ["TFC001"]\n')
    settings = load_settings([str(tmp_path)], Overrides(ignore=("TFC002",)), cwd=str(tmp_path))
    assert "TFC001" not in settings.enabled and "TFC002" not in settings.enabled
    assert "TFC003" in settings.enabled


def test_prefix_selects_default_rules_and_full_code_selects_any() -> None:
    defaults = {rule.code for rule in all_rules() if rule.default_enabled}
    assert resolve_selection(None, (), ()) == frozenset(defaults)
    assert resolve_selection(("TFC0",), (), ()) == frozenset(
        code for code in defaults if code.startswith("TFC0"))
    off = [rule.code for rule in all_rules() if not rule.default_enabled]
    for code in off:
        assert code not in resolve_selection(None, (), ())
        assert code in resolve_selection(None, (code,), ())


def test_per_file_ignores_match_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchfix-codemods.per-file-ignores]\n"tests/**" = ["TFC0"]\n')
    settings = load_settings([str(tmp_path)], Overrides(), cwd=str(tmp_path))
    assert {"TFC001", "TFC002"} <= settings.ignored_for(str(tmp_path / "tests" / "a" / "t.py"))
    assert settings.ignored_for(str(tmp_path / "src" / "t.py")) == frozenset()


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ('jobs = 0', "'jobs' must be a positive integer"),
        ('select = "TFC001"\nper-file-ignores = 3', "'per-file-ignores' must be a table"),
        ('select = [1, 2]', "'select' must be a list of strings"),
        ('respect-gitignore = "no"', "'respect-gitignore' must be true or false"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, table: str, needle: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.torchfix-codemods]\n{table}\n")
    with pytest.raises(ConfigError, match=needle):
        load_settings([str(tmp_path)], Overrides(), cwd=str(tmp_path))
