"""The words for password, key, secret and token in other languages: the one list redaction reads.

A key that holds one of these words (``senha``, ``db_contraseña``, ``chave_api``) names a secret
the way ``password`` does in English: ``policy/redactor/`` builds its key pattern, its gates and
its name/value rules from :data:`SECRET_WORDS`. Add a word here, with the language it comes from;
nothing else needs to change (``tests/unit/policy/test_redact.py`` checks each word hides a value).

Sources:

- "password": the ``msgid "Password"`` of Django's auth catalogs,
  ``django/contrib/auth/locale/<lang>/LC_MESSAGES/django.po`` (pt_BR "Senha", es "Contraseña",
  ca "Contrasenya", fr "Mot de passe", de "Passwort" and "Kennwort" in older catalogs, nl
  "Wachtwoord", sv "Lösenord", nb "Passord", da "Adgangskode", fi "Salasana", et "Salasõna", lv
  "Parole", lt "Slaptažodis", pl "Hasło", cs and sk "Heslo", sl "Geslo", hr "Lozinka", hu "Jelszó",
  ro "Parolă", tr "Parola", id "Kata sandi", ms "Kata laluan", vi "Mật khẩu", el "Συνθηματικό", ru
  and uk "Пароль", bg "Парола", sr "Лозинка", he "סיסמה", ar "كلمة المرور", fa "گذرواژه", hi
  "पासवर्ड", th "รหัสผ่าน", zh_Hans "密码", ja "パスワード", ko "비밀번호"), checked against
  Mozilla's Firefox catalogs (``toolkit/.../passwordmgr``, "Password" per locale), and
  PostgreSQL's message catalogs, ``src/backend/po/<lang>.po``, whose
  ``password authentication failed`` reads "autenticação do tipo senha falhou" (pt_BR) and
  "la autentificación password falló" (es).
- "key", "secret", "token", "credential", "PIN": Wiktionary's translation tables of each English
  word (pt "chave", "segredo", "credencial"; es "clave", "llave", "secreto", "credencial"; it
  "chiave", "segreto"; de "Schlüssel", "Geheimnis", "Zugangsdaten"; fr "clé", "jeton"; nl
  "sleutel"; sv "hemlighet", no "hemmelighet", da "hemmelighed"; pl "klucz"; tr "anahtar"; fi
  "avain"; ru "ключ", "секрет", "токен"; el "κωδικός";
  fa "رمز", "رمز عبور"; zh "口令", "密钥", "秘钥", "令牌"; ja "暗証番号", "秘密鍵", "トークン"; ko "암호",
  "패스워드", "토큰", "키" after "API", "시크릿"; hi "कुंजी"; id and ms "kunci"; ar "مفتاح"; ja "キー";
  vi "bí mật"), in the forms code writes them: lower case,
  with and without their accents, with ``_`` or a space between words.

Left out on purpose: words that are the inside of common English words (fr "clé" without its
accent, ``cle``, is in ``article`` and ``vehicle``: only ``clé`` is listed), and words the
English list already catches (pt-PT "palavra-passe", de "Passwort" all hold ``pass``, es
"secreto" holds ``secret``, "token" is the same word). pl ``haslo`` is in ``hasLoaded``, whose values (``true``, ``false``) are placeholders
redaction keeps anyway.

A key in a non-Latin script is read whole: the key pattern's letters are Unicode letters
(RE2's ``\\pL``, not ``\\w``, which is ASCII only), and a full-width ``：`` or ``＝`` separates it
from its value as ``:`` and ``=`` do.
"""

from __future__ import annotations

SECRET_WORDS: dict[str, tuple[str, ...]] = {
    "pt": ("senha", "chave", "segredo", "credencia"),  # credencial, credenciais
    "es": ("contraseña", "contrasena", "clave", "llave", "credencia"),  # credencial, credenciales
    "ca": ("contrasenya",),
    "it": ("chiave", "segreto"),
    "fr": ("mot_de_passe", "motdepasse", "mot de passe", "jeton", "clé"),
    "de": ("kennwort", "schlüssel", "schluessel", "geheimnis", "zugangsdaten"),
    "nl": ("wachtwoord", "sleutel"),
    "sv": ("lösenord", "losenord", "hemlighet"),  # hemlighet: secret
    "no": ("passord", "hemmelighet"),  # Norwegian and Danish; hemmelighet: secret
    "da": ("adgangskode", "kodeord", "hemmelighed"),
    "fi": ("salasana", "avain"),  # avain: key (salainen avain, secret key)
    "et": ("salasõna", "parool"),
    "lv": ("parole",),
    "lt": ("slaptažodis", "slaptazodis"),
    "pl": ("hasło", "haslo", "klucz"),
    "cs": ("heslo",),  # Czech and Slovak
    "sl": ("geslo",),
    "hr": ("lozinka", "lozinku"),  # Croatian, Serbian and Bosnian in Latin script
    "hu": ("jelszó", "jelszo", "kulcs"),  # kulcs: key (Számlázz.hu's szamlaagentkulcs)
    "ro": ("parolă", "parola"),  # parola is Turkish and Italian too
    "tr": ("sifre", "şifre", "anahtar"),
    "id": ("kata_sandi", "katasandi", "kata sandi", "kunci"),  # kunci: key (Indonesian and Malay)
    "ms": ("kata_laluan", "kata laluan"),
    "vi": (
        "mật khẩu",
        "mật_khẩu",
        "mat_khau",
        "matkhau",
        "bí mật",
    ),  # bí mật: secret (khóa bí mật, secret key)
    "el": ("κωδικός", "κωδικος", "κωδικός πρόσβασης", "συνθηματικό"),
    "bn": ("পাসওয়ার্ড",),
    "ur": ("پاس ورڈ",),
    "ta": ("கடவுச்சொல்",),
    "sw": ("nenosiri",),
    "az": ("şifrə",),
    "uz": ("parol",),  # Uzbek's and Azerbaijani's, and Russian's пароль romanised
    "ka": ("პაროლი",),
    "hy": ("գաղտնաբառ",),
    "is": ("lykilorð",),
    "ru": ("пароль", "ключ", "секрет", "токен"),  # Russian and Ukrainian
    "bg": ("парола",),
    "sr": ("лозинка",),
    "he": ("סיסמה", "סיסמא", "סיסמת"),  # סיסמת: the construct state (סיסמת ממשק, the interface's password)
    "ar": ("كلمة المرور", "كلمة_المرور", "كلمة السر", "كلمة_السر", "مفتاح"),  # مفتاح: key
    "fa": ("رمز", "رمز عبور", "رمز_عبور", "گذرواژه"),
    "hi": ("पासवर्ड", "कूटशब्द", "कुंजी"),  # कुंजी: key (गुप्त कुंजी, secret key)
    "th": ("รหัสผ่าน",),
    "zh": ("密码", "口令", "密钥", "秘钥", "私钥", "令牌"),
    "zh_pinyin": ("mima", "miyao"),  # 密码 and 密钥 romanised, as config keys are written: jdbc.mima=
    "ja": ("パスワード", "暗証番号", "秘密鍵", "トークン", "シークレット", "キー"),  # キー: key (APIキー)
    "ko": ("비밀번호", "암호", "패스워드", "토큰", "api 키", "api키", "시크릿"),
}
"""Each language's words for a secret, as they appear inside a key (lower case)."""

PASSPHRASE_WORDS: tuple[str, ...] = (
    "senha",
    "contraseña",
    "contrasena",
    "contrasenya",
    "mot_de_passe",
    "motdepasse",
    "kennwort",
    "wachtwoord",
    "lösenord",
    "losenord",
    "passord",
    "adgangskode",
    "salasana",
    "parool",
    "hasło",
    "haslo",
    "heslo",
    "lozinka",
    "jelszó",
    "jelszo",
    "parola",
    "sifre",
    "sandi",
    "mat_khau",
    "пароль",
    "парола",
    "лозинка",
    "סיסמה",
    "كلمة_المرور",
    "رمز_عبور",
    "पासवर्ड",
    "รหัสผ่าน",
    "密码",
    "口令",
    "パスワード",
    "暗証番号",
    "비밀번호",
)
"""The words among them that mean *password*: a bare value after one may hold spaces (a passphrase)."""


ID_WORDS: tuple[str, ...] = (
    "identifier",  # en (Plex's machineIdentifier=<40 hex>)
    "identificador",  # pt, es
    "identifiant",  # fr
    "identyfikator",  # pl
    "идентификатор",  # ru, bg
    "ідентифікатор",  # uk
    "αναγνωριστικό",  # el
    "شناسه",  # fa
    "معرف",  # ar
    "标识",  # zh
    "编号",  # zh
    "識別子",  # ja
    "식별자",  # ko
    "định danh",  # vi
    "ตัวระบุ",  # th
)
"""The words for *identifier* (Wiktionary's translation table of "identifier"): a random run they name just
before it is an id on-call reads (IDPay's ``شناسه تراکنش <32 hex>``, a transaction's id), as English's
``id`` is; its own key still decides when it names a secret. Left out: words that also mean a secret
or a login (th "รหัส" is also a password's word, tr "kimlik" also credentials')."""


REQUEST_WORDS: tuple[str, ...] = (
    "solicitud",  # es
    "requisição",  # pt
    "solicitação",  # pt
    "requête",  # fr
    "anfrage",  # de
    "richiesta",  # it
    "verzoek",  # nl
    "żądanie",  # pl
    "zapytanie",  # pl
    "požadavek",  # cs
    "запрос",  # ru
    "запит",  # uk
    "istek",  # tr
    "请求",  # zh
    "リクエスト",  # ja
    "요청",  # ko
)
"""The words for a *request* (Wiktionary's translation table of "request"): a random run they name just
before it is the request's id (IdoSell's ``żądanie <32 hex>``), as English's ``request`` names one."""


PUBLIC_KEY_WORDS: tuple[str, ...] = (
    "chave pública",  # pt
    "clave pública",  # es
    "llave pública",  # es (Latin America: Openpay's "llave pública pk_...")
    "clé publique",  # fr
    "chiave pubblica",  # it
    "öffentlicher schlüssel",  # de
    "öffentliche schlüssel",  # de (plural)
    "openbare sleutel",  # nl
    "klucz publiczny",  # pl
    "veřejný klíč",  # cs
    "nyilvános kulcs",  # hu
    "cheie publică",  # ro
    "julkinen avain",  # fi
    "offentlig nyckel",  # sv
    "açık anahtar",  # tr
    "kunci publik",  # id
    "открытый ключ",  # ru
    "публичный ключ",  # ru
    "відкритий ключ",  # uk
    "δημόσιο κλειδί",  # el
    "מפתח ציבורי",  # he
    "المفتاح العام",  # ar
    "کلید عمومی",  # fa
    "सार्वजनिक कुंजी",  # hi
    "公钥",  # zh
    "公開鍵",  # ja
    "공개 키",  # ko
    "공개키",  # ko
    "khóa công khai",  # vi
)
"""The words for *public key* (Wiktionary's translation table of "public key"): a random run they name just
before it is published (Everypay's ``δημόσιο κλειδί pk_...``), as English's ``public key`` is."""


CODE_WORDS: tuple[str, ...] = (
    "verification code",  # en
    "confirmation code",  # en
    "security code",  # en
    "one-time code",  # en
    "one-time password",  # en
    "código de verificação",  # pt
    "código de confirmação",  # pt
    "codigo de verificacao",  # pt, without its accents
    "código de verificación",  # es
    "código de confirmación",  # es
    "codigo de verificacion",  # es, without its accents
    "code de vérification",  # fr
    "code de confirmation",  # fr
    "bestätigungscode",  # de
    "verifizierungscode",  # de
    "codice di verifica",  # it
    "codice di conferma",  # it
    "verificatiecode",  # nl
    "kod weryfikacyjny",  # pl
    "doğrulama kodu",  # tr
    "dogrulama kodu",  # tr, without its accents
    "onay kodu",  # tr
    "kode verifikasi",  # id
    "mã xác nhận",  # vi
    "ma xac nhan",  # vi, as an SMS without diacritics writes it
    "mã xác thực",  # vi
    "ma xac thuc",  # vi
    "код подтверждения",  # ru
    "код проверки",  # ru
    "код підтвердження",  # uk
    "κωδικός επαλήθευσης",  # el
    "קוד אימות",  # he
    "رمز التحقق",  # ar
    "کد تایید",  # fa
    "सत्यापन कोड",  # hi
    "รหัสยืนยัน",  # th
    "验证码",  # zh
    "驗證碼",  # zh (traditional)
    "認証コード",  # ja
    "確認コード",  # ja
    "인증번호",  # ko
    "인증 번호",  # ko
)
"""The words for a *verification code* (Wiktionary's translation tables of "verification" and "code", in
the phrases SMS and mail templates write): the first number of four to eight digits after one, on its line,
is the one-time code a message sends (SpeedSMS's ``Ma xac nhan don hang DH-1 cua ban la 482913``)."""


def words() -> tuple[str, ...]:
    """Every word of :data:`SECRET_WORDS`, once each, in a stable order."""
    return tuple(dict.fromkeys(word for group in SECRET_WORDS.values() for word in group))
