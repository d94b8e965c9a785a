"""The words for password, key, secret and token in other languages: the one list redaction reads.

A key that holds one of these words (``senha``, ``db_contraseña``, ``chave_api``) names a secret
the way ``password`` does in English: ``policy/redact.py`` builds its key pattern, its gates and
its name/value rules from :data:`SECRET_WORDS`. Add a word here, with the language it comes from;
nothing else needs to change (``tests/unit/policy/test_redact.py`` checks each word hides a value).

Sources:

- "password": the ``msgid "Password"`` of Django's auth catalogs,
  ``django/contrib/auth/locale/<lang>/LC_MESSAGES/django.po`` (pt_BR "Senha", es "Contraseña",
  de "Passwort" and "Kennwort" in older catalogs, nl "Wachtwoord", tr "Parola", id "Kata sandi"),
  and PostgreSQL's message catalogs, ``src/backend/po/<lang>.po``, whose
  ``password authentication failed`` reads "autenticação do tipo senha falhou" (pt_BR) and
  "la autentificación password falló" (es).
- "key", "secret", "token", "credential": Wiktionary's translation tables of each English word
  (pt "chave", "segredo", "credencial"; es "clave", "llave", "secreto", "credencial"; it "chiave",
  "segreto"; de "Schlüssel"; fr "clé secrète"), in the forms code writes them: ASCII, lower case,
  with and without their accents.

Left out on purpose: words that are the inside of common English words (fr "clé" as ``cle`` is in
``article`` and ``vehicle``; pl "hasło" as ``haslo`` is in ``hasLoaded``), and words the English
list already catches (pt-PT "palavra-passe", fr "mot de passe", de "Passwort" all hold ``pass``,
es "secreto" holds ``secret``, "token" is the same word).
"""

from __future__ import annotations

SECRET_WORDS: dict[str, tuple[str, ...]] = {
    "pt": ("senha", "chave", "segredo", "credencia"),  # credencial, credenciais
    "es": ("contraseña", "contrasena", "clave", "llave", "credencia"),  # credencial, credenciales
    "it": ("chiave", "segreto"),
    "de": ("kennwort", "schlüssel", "schluessel"),
    "nl": ("wachtwoord",),
    "tr": ("parola", "sifre", "şifre"),
    "id": ("kata_sandi", "katasandi"),
}
"""Each language's words for a secret, as they appear inside a key (lower case)."""

PASSPHRASE_WORDS: tuple[str, ...] = (
    "senha",
    "contraseña",
    "contrasena",
    "kennwort",
    "wachtwoord",
    "parola",
    "sifre",
    "sandi",
)
"""The words among them that mean *password*: a bare value after one may hold spaces (a passphrase)."""


def words() -> tuple[str, ...]:
    """Every word of :data:`SECRET_WORDS`, once each, in a stable order."""
    return tuple(dict.fromkeys(word for group in SECRET_WORDS.values() for word in group))
