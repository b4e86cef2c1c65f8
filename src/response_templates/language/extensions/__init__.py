"""Internal: the template-language extensions, one module each (see docs/extensions.md for what they mean).

Each module holds one extension's keys, its validation and its compilation, described by one
:class:`~response_templates.language.extension.Extension` named ``EXTENSION``; its docstring says where
its behaviour while parsing is implemented. :mod:`response_templates.language.registry` lists them.

This package's ``__init__`` imports nothing, so importing one extension module does not load the others.
"""

__all__: list[str] = []
