"""`kbkit skills validate`: SKILL.md folders checked against the spec, as `skills-ref` checks them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from kbkit.errors import SkillError
from kbkit.skills import files
from kbkit.skills.sources import skill_folders
from kbkit.skills.spec import SKILL_FILE, problems_of, split_frontmatter


@dataclass
class Validation:
    path: str
    name: str | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "valid": self.valid}


def validate_folder(folder: Path, *, strict: bool = False) -> Validation:
    """One skill folder: every error at once (not only the first), and the warnings."""
    result = Validation(str(folder))
    try:
        text = files.read_one(folder, SKILL_FILE).decode("utf-8")
        meta, _ = split_frontmatter(text, SKILL_FILE)
    except UnicodeDecodeError:
        result.errors.append(f"{SKILL_FILE} is not UTF-8 text")
        return result
    except SkillError as exc:
        result.errors.append(str(exc))
        return result
    result.name = meta.get("name") if isinstance(meta.get("name"), str) else None
    result.errors, result.warnings = problems_of(meta, folder.resolve().name, strict=strict)
    return result


def validate_path(path: Path, *, strict: bool = False) -> list[Validation]:
    """`path` itself when it holds SKILL.md, else every skill folder below it (up to 5 levels)."""
    path = Path(path)
    if not path.is_dir():
        raise SkillError(f"{path} is not a folder; give a skill folder or a folder of skills")
    folders = list(skill_folders(path))
    if not folders:
        return [Validation(str(path), errors=[f"no {SKILL_FILE} here or in any folder below"])]
    return [validate_folder(folder, strict=strict) for folder in folders]
