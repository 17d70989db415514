// Production's setup script, with its snippet imported (what `checkly import` makes of setupSnippetId).
import './snippets/auth-header'
